import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("secrets: and observed exchanges", .timeLimit(.minutes(1)), .takesTurns)
struct SecretsAndExchangesTests {
    @Test func secretValuesAreRedactedInEveryReportField() async throws {
        let workflow = try Workflow.parse(
            """
            vars: { key: "k3y/1", user: ada }
            secrets: [key, env.TOKEN]
            steps:
              - { id: a, url: "http://x.test/a?key={{vars.key}}&t={{env.TOKEN}}", captures: { echo: $.echo } }
              - { id: b, url: "http://x.test/b", assert: [ { $.echo: "{{vars.key}}!" } ] }
            """, file: "flow.yaml", environment: ["TOKEN": "tok-9"])
        let transport = ScriptedHTTPTransport { request, _ in
            respond(200, #"{"echo":"k3y/1 and tok-9"}"#)
        }
        let finished = Locked<[StepReport]>([])
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock()) { event in
                if case .finished(let step) = event { finished.withLock { $0.append(step) } }
            }
        }
        // What was sent is not redacted: only what is shown.
        #expect(transport.requests.contains { $0.path == "/a?key=k3y%2F1&t=tok-9" })
        #expect(report["a"]?.url == "http://x.test/a?key=***&t=***")
        #expect(report["a"]?.captures.first?.value == .string("*** and ***"))
        let b = try #require(report["b"])
        #expect(b.error == #"1 of 1 assertions failed: $.echo == "***!": got "*** and ***""#)
        #expect(finished.withLock { $0.map(\.url) }.allSatisfy { !$0.contains("k3y") && !$0.contains("tok-9") })
    }

    @Test func aSecretIsRedactedInTheFilesErrorsToo() {
        let messages = errors(
            "vars: { host: \"ftp://h0st\" }\nsecrets: [host]\nsteps:\n  - { id: a, url: \"{{vars.host}}/\" }\n"
        ).map(\.description)
        #expect(!messages.isEmpty && messages.allSatisfy { !$0.contains("h0st") }, "\(messages)")
        #expect(messages.contains { $0.contains("***") }, "\(messages)")
    }

    @Test func aSecretThatIsNotAVariableIsAnError() {
        let messages = errors(
            "vars: { key: x }\nsecrets: [kye, env.NOPE_UNSET_42]\nsteps:\n  - { id: a, url: \"http://x.test/\" }\n"
        )
        .map(\.description)
        #expect(
            messages.contains {
                $0.hasPrefix("flow.yaml:2:") && $0.contains("'kye' is not a variable (did you mean 'key'?)")
            }, "\(messages)")
        #expect(messages.contains { $0.contains("'NOPE_UNSET_42' is not set") }, "\(messages)")
    }

    @Test func redactorReplacesSecretsAndTheirURLFormsAndSensitiveHeaders() {
        let redactor = Redactor(secrets: ["a b", "", "a b c", #"q"t"#])
        #expect(redactor.redact("x a b c y a%20b z a+b") == "x *** y *** z ***")
        #expect(redactor.redact(#"{"p":"q\"t"}"#) == #"{"p":"***"}"#)
        #expect(redactor.redact(header: .authorization, value: "Bearer t") == "***")
        #expect(redactor.redact(header: .setCookie, value: "sid=1") == "***")
        #expect(redactor.redact(header: .contentType, value: "a b") == "***")
        #expect(Redactor(secrets: [""]).isEmpty)
    }

    @Test func everyAttemptHopLoginAndFailureIsObservedWithItsLabel() async throws {
        let workflow = try Workflow.parse(
            """
            auth:
              login: { url: "http://x.test/login", token: $.token }
            steps:
              - { id: go, url: "http://x.test/go", retry: { attempts: 2, backoff: 0s } }
              - { id: down, url: "http://down.test/", auth: false }
            """, file: "flow.yaml", environment: [:])
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { request, _ in
            let call =
                request.path == "/go"
                ? calls.withLock {
                    $0 += 1
                    return $0
                } : 0
            switch request.path {
            case "/login": return respond(200, #"{"token":"t"}"#)
            case "/go" where call == 1: return respond(503)
            case "/go": return respond(302, "", headers: [.location: "/there"])
            case "/there": return respond(200)
            default: throw URLError(.cannotConnectToHost)
            }
        }
        let exchanges = Locked<[HTTPExchange]>([])
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(
                workflow: workflow, transport: transport,
                observer: { exchange in exchanges.withLock { $0.append(exchange) } }
            ).run(clock: ManualClock())
        }
        #expect(report["go"]?.state == .succeeded && report["down"]?.state == .failed)
        let seen = exchanges.withLock { $0 }.map {
            "\($0.label) \($0.request.path ?? "") \($0.response?.status.code ?? 0)"
        }
        #expect(seen.filter { $0.hasPrefix("go ") } == ["go /go 503", "go /go 302", "go /there 200"])
        #expect(seen.contains("auth /login 200"))
        let failure = exchanges.withLock { $0 }.first { $0.label == "down" }
        #expect(failure?.response == nil && failure?.error != nil)
        #expect(
            exchanges.withLock { $0 }.first { $0.request.path == "/there" }?.request.headerFields[.authorization]
                == "Bearer t", "the exchange shows the request as signed")
    }
}
