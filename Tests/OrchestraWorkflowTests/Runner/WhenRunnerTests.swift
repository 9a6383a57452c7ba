import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// `when:`: a step whose condition is false is skipped with the reason, its dependents too,
/// naming it; neither is a failure, with `failure: stop` either.
@Suite("WorkflowRunner: when", .timeLimit(.minutes(1)), .takesTurns)
struct WhenRunnerTests {
    static func transport() -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, _ in
            request.path == "/login" ? respond(200, #"{"role":"user","n":3,"beta":false}"#) : respond(200, "{}")
        }
    }

    static func run(
        _ yaml: String, variables: [String: String] = [:]
    ) async throws -> (
        WorkflowReport, ScriptedHTTPTransport
    ) {
        let transport = transport()
        let workflow = try Workflow.parse(
            yaml, file: "flow.yaml", variables: variables, environment: ["ORCHESTRA_SET": "1"])
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        return (report, transport)
    }

    static let flow = """
        failure: stop
        steps:
          - { id: login, url: "http://x.test/login", captures: { role: $.role, n: $.n, beta: $.beta } }
          - { id: admin, url: "http://x.test/admin", when: "{{login.role}} == 'admin'", captures: { x: $.x } }
          - { id: audit, url: "http://x.test/audit?x={{admin.x}}" }
          - { id: after, url: "http://x.test/after", needs: [audit] }
          - { id: user, url: "http://x.test/user", when: "{{login.role}} != 'admin'" }
        """

    @Test func aFalseConditionSkipsTheStepAndItsDependentsWithoutFailingTheRun() async throws {
        let (report, transport) = try await Self.run(Self.flow)
        #expect(report.allSucceeded, "a skip is not a failure, with failure: stop either")
        let admin = try #require(report["admin"])
        #expect(admin.state == .skipped && admin.skippedByCondition && admin.attempts == 0)
        #expect(admin.error == #"skipped: when "{{login.role}} == 'admin'" was false ({{login.role}} is 'user')"#)
        #expect(admin.cause == nil)
        #expect(report["audit"]?.state == .skipped && report["audit"]?.cause == "admin")
        #expect(report["audit"]?.error == "skipped because 'admin' was skipped")
        #expect(report["after"]?.state == .skipped && report["after"]?.cause == "audit", "transitively")
        #expect(report["user"]?.state == .succeeded)
        #expect(Set(transport.requests.compactMap(\.path)) == ["/login", "/user"])
    }

    struct Case: Sendable, CustomStringConvertible {
        var when: String
        var runs: Bool
        var description: String { when }
    }

    static let cases: [Case] = [
        Case(when: #""{{login.n}} > 2""#, runs: true),
        Case(when: #""{{login.n}} <= 2""#, runs: false),
        Case(when: #""{{login.n}} == 3.0""#, runs: true),
        Case(when: #""{{login.beta}}""#, runs: false),
        Case(when: #""{{login.role}}""#, runs: true),
        Case(when: #"{ exists: "{{vars.token}}" }"#, runs: false),
        Case(when: #"{ exists: "{{vars.defined}}" }"#, runs: true),
        Case(when: #"{ exists: "{{vars.empty}}" }"#, runs: false),
        Case(when: #"{ exists: "{{env.ORCHESTRA_SET}}" }"#, runs: true),
        Case(when: #"{ not: { exists: "{{env.ORCHESTRA_UNSET}}" } }"#, runs: true),
        Case(when: #"{ all: ["{{login.n}} > 2", "{{login.role}} == 'admin'"] }"#, runs: false),
        Case(when: #"{ any: ["{{login.n}} > 2", "{{login.role}} == 'admin'"] }"#, runs: true),
        Case(when: #""{{vars.defined}}-{{login.role}} == 'yes-user'""#, runs: true),
    ]

    @Test(arguments: cases)
    func conditions(_ input: Case) async throws {
        let yaml = """
            vars: { defined: "yes", empty: "" }
            steps:
              - { id: login, url: "http://x.test/login", captures: { role: $.role, n: $.n, beta: $.beta } }
              - { id: step, url: "http://x.test/step", when: \(input.when) }
            """
        let (report, _) = try await Self.run(yaml)
        let step = try #require(report["step"])
        #expect(step.state == (input.runs ? .succeeded : .skipped), "\(step.error ?? "")")
        #expect(report.allSucceeded)
    }

    @Test func aConditionThatCannotBeDecidedFailsTheStep() async throws {
        let (report, transport) = try await Self.run(
            """
            steps:
              - { id: login, url: "http://x.test/login", captures: { role: $.role } }
              - { id: step, url: "http://x.test/step", when: "{{login.role}} > 2" }
            """)
        #expect(report["step"]?.state == .failed)
        #expect(report["step"]?.error == "when: '>' compares numbers, and {{login.role}} is 'user'")
        #expect(!transport.requests.contains { $0.path == "/step" })
    }

    @Test func aSecretInTheReasonIsMasked() async throws {
        let (report, _) = try await Self.run(
            """
            vars: { key: "s3cr3t-value" }
            secrets: [key]
            steps:
              - { id: step, url: "http://x.test/step", when: "{{vars.key}} == 'other'" }
            """)
        let error = try #require(report["step"]?.error)
        #expect(!error.contains("s3cr3t-value") && error.contains("***"), "\(error)")
    }
}
