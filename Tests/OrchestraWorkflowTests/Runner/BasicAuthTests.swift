import Foundation
import HTTPTypes
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("basic_auth", .timeLimit(.minutes(1)), .takesTurns)
struct BasicAuthTests {
    func run(_ text: String) async throws -> (WorkflowReport, ScriptedHTTPTransport) {
        let workflow = try Workflow.parse(text, file: "flow.yaml", environment: ["PASS": "s3cret"])
        let transport = ScriptedHTTPTransport { _, _ in respond(200, #"{"who":"grace"}"#) }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        return (report, transport)
    }

    func authorization(_ transport: ScriptedHTTPTransport, path: String) -> String? {
        transport.requests.first { $0.path == path }?.headerFields[.authorization]
    }

    @Test func stepsSendBasicCredentialsTheirOwnOrTheWorkflowsAndAnExplicitHeaderWins() async throws {
        let (report, transport) = try await run(
            """
            basic_auth: { user: ada, password: "{{env.PASS}}" }
            steps:
              - { id: a, url: "http://x.test/a", captures: { who: $.who } }
              - { id: b, url: "http://x.test/b", basic_auth: { user: "{{a.who}}", password: "p w" } }
              - { id: c, url: "http://x.test/c", headers: { Authorization: "Bearer t" } }
            """)
        #expect(report.allSucceeded)
        // base64("ada:s3cret") and base64("grace:p w"), computed with Python's base64.
        #expect(authorization(transport, path: "/a") == "Basic YWRhOnMzY3JldA==")
        #expect(authorization(transport, path: "/b") == "Basic Z3JhY2U6cCB3")
        #expect(authorization(transport, path: "/c") == "Bearer t")
    }

    @Test func aUserWithAColonFailsTheStepWithoutSendingIt() async throws {
        let (report, transport) = try await run(
            "steps:\n  - { id: a, url: \"http://x.test/a\", basic_auth: { user: \"a:b\", password: x } }\n")
        #expect(report["a"]?.state == .failed)
        #expect(
            report["a"]?.error?.contains("the user 'a:b' contains ':'") == true,
            "\(String(describing: report["a"]?.error))")
        #expect(transport.requests.isEmpty)
    }

    @Test func aMissingPasswordOrAnUnknownKeyIsAnErrorWithItsLine() {
        let messages = errors(
            """
            basic_auth: { user: ada }
            steps:
              - { id: a, url: "http://x.test/a", basic_auth: { user: ada, password: x, realm: r } }
            """
        ).map(\.description)
        #expect(messages.contains { $0.hasPrefix("flow.yaml:1:") && $0.contains("missing 'password'") }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("flow.yaml:3:") && $0.contains("realm") }, "\(messages)")
    }
}
