import Foundation
import HTTPTypes
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("{{env.NAME}}", .timeLimit(.minutes(1)), .takesTurns)
struct EnvironmentTests {
    static let text = """
        auth:
          login: { url: "http://x.test/login", body: { password: "{{env.ORCH_PASS}}" }, token: $.token }
        steps:
          - id: a
            url: "http://x.test/items?key={{env.ORCH_KEY}}"
            headers: { X-Key: "{{env.ORCH_KEY}}" }
        """

    @Test func environmentVariablesAreReadAtLoadAndSentInTheRequestsAndTheLogin() async throws {
        let environment = ["ORCH_KEY": "k 1", "ORCH_PASS": "s3cret", "UNUSED": "x"]
        let workflow = try Workflow.parse(Self.text, file: "flow.yaml", environment: environment)
        #expect(workflow.environment == ["ORCH_KEY": "k 1", "ORCH_PASS": "s3cret"], "only the ones it uses")
        #expect(workflow.step("a")?.dependencies == [], "{{env…}} is no step's capture")
        let loginBody = EventLog<String>()
        let transport = ScriptedHTTPTransport { request, body in
            guard request.path == "/login" else { return respond() }
            loginBody.append(String(decoding: body ?? Data(), as: UTF8.self))
            return respond(200, #"{"token":"t"}"#)
        }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded)
        #expect(loginBody.events == [#"{"password":"s3cret"}"#])
        let step = try #require(transport.requests.first { $0.path?.hasPrefix("/items") == true })
        #expect(step.path == "/items?key=k%201")
        #expect(step.headerFields[HTTPField.Name("X-Key")!] == "k 1")
    }

    @Test func anUnsetEnvironmentVariableIsAnErrorNamingItAndItsLine() {
        do {
            _ = try Workflow.parse(Self.text, file: "flow.yaml", environment: ["ORCH_KEY": "k"])
            Issue.record("ORCH_PASS is not set")
        } catch {
            #expect(error.errors.count == 1)
            let message = error.errors.first?.description ?? ""
            #expect(message.contains("flow.yaml:2:"), "\(message)")
            #expect(message.contains("the environment variable 'ORCH_PASS'"), "\(message)")
            #expect(message.contains("is not set"), "\(message)")
        }
    }

    @Test func envIsAReservedStepID() {
        let problems = errors("steps:\n  - { id: env, url: \"http://x.test/\" }\n")
        #expect(problems.map(\.description).contains { $0.contains("'env' is reserved") }, "\(problems)")
    }
}
