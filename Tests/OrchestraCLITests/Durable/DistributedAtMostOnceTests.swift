import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A worker SIGKILLed while it sends POSTs of `orchestra run --state postgres://…`: a POST
/// without `Idempotency-Key` is reported "may have been sent" and not sent again, exactly as
/// with a state file; with the key, or `resend_on_resume: true`, it is sent again; and
/// `--resend-uncertain` sends the uncertain ones when the run goes on.
@Suite(
    "orchestra run --state postgres://…: at most once for requests not safe to send twice",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(5)), .takesTurns)
struct DistributedAtMostOnceTests {
    /// What a step's POST carries, and what becomes of it after its worker is killed.
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        /// Extra lines of the step.
        var fields: String
        /// Whether the POSTs in flight at the kill are sent again.
        var resent: Bool
        var testDescription: String { name }
    }

    static let scenarios = [
        Scenario(name: "POST without Idempotency-Key", fields: "", resent: false),
        Scenario(
            name: "POST with Idempotency-Key", fields: #"headers: { Idempotency-Key: "charge-{{item}}" }"#,
            resent: true),
        Scenario(name: "POST with resend_on_resume: true", fields: "resend_on_resume: true", resent: true),
    ]

    static let count = 4

    /// The list, then one POST per element to `/gated/charge-N`, held while the gate is closed.
    static func workflow(base: URL, fields: String) throws -> String {
        try WorkflowCommandTests.workflowFile(
            """
            name: Charges
            vars: { base: "\(base.absoluteString)" }
            limit: 8
            steps:
              - { id: list, url: "{{vars.base}}/list/\(count)", captures: { items: $.items } }
              - id: charge
                for_each: "{{list.items}}"
                method: POST
                url: "{{vars.base}}/gated/charge-{{item}}"
                \(fields)
            """)
    }

    @Test(
        "a worker killed with POSTs in flight: unkeyed ones may have been sent and are not sent again, keyed ones are",
        .enabled(if: ExitTests.areEnabled), arguments: scenarios)
    func workerKilledWithPostsInFlight(_ scenario: Scenario) async throws {
        try await DistributedRunTests.withServerAndSchema { server, schema in
            let file = try Self.workflow(base: server.baseURL, fields: scenario.fields)
            let paths = (0..<Self.count).map { "/gated/charge-\($0)" }
            server.closeGate()
            let first = try DistributedRunTests.worker(schema, lease: 2)
            let coordinator = try OrchestraExecutable.start(
                DistributedRunTests.coordinator(file, schema: schema, runID: "charges"))
            // The list, then every POST held at the server by the closed gate: all in flight.
            try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 1 + Self.count) }
            first.child.send(SIGKILL)
            _ = await first.finish(limit: .seconds(30))
            server.openGate()
            let second = try DistributedRunTests.worker(schema, lease: 2)
            let run = await coordinator.finish(limit: .seconds(120))
            if scenario.resent {
                #expect(run.status == 0, "\(run)")
                #expect(run.stdout.contains("\(Self.count) requests sent, \(Self.count) succeeded"), "\(run)")
                #expect(paths.allSatisfy { server.arrivals(of: $0) == 2 }, "\(paths.map(server.arrivals(of:)))")
                await DistributedRunTests.stop([second])
                return
            }
            #expect(run.status == 1, "\(run)")
            #expect(
                run.stdout.contains(
                    "may have been sent: in flight when its worker stopped, and a POST is not safe to send twice, so it was not sent again"
                ), "\(run)")
            #expect(paths.allSatisfy { server.arrivals(of: $0) == 1 }, "\(paths.map(server.arrivals(of:)))")

            // Going on with the run, --resend-uncertain sends them again; the list is read back.
            let again = try await OrchestraExecutable.run(
                DistributedRunTests.coordinator(file, schema: schema, runID: "charges") + ["--resend-uncertain"],
                limit: .seconds(120))
            await DistributedRunTests.stop([second])
            #expect(again.status == 0, "\(again)")
            #expect(again.stdout.contains("\(Self.count) that may have been sent sent again"), "\(again)")
            #expect(paths.allSatisfy { server.arrivals(of: $0) == 2 }, "\(paths.map(server.arrivals(of:)))")
            #expect(server.arrivals(of: "/list/\(Self.count)") == 1)
        }
    }

    @Test("--resend-uncertain with --state postgres://… needs the --run-id of the run to go on with")
    func resendUncertainNeedsARunID() async throws {
        let file = try Self.workflow(base: URL(string: "http://127.0.0.1:1")!, fields: "")
        let run = try await OrchestraExecutable.run([
            "run", file, "--state", DistributedRunTests.url, "--resend-uncertain",
        ])
        #expect(run.status == 2, "\(run)")
        #expect(run.stderr.contains("--resend-uncertain goes on with a run: give its --run-id"), "\(run)")
    }
}
