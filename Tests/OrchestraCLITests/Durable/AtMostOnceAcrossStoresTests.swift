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

/// The same crash, the same promise, in both stores: the process sending POSTs is SIGKILLed
/// while they are held at the server. With a state file that process is the run itself, and
/// the run is started again on the file; with PostgreSQL it is a worker, and another worker
/// takes over while the coordinator waits. Either way a POST without `Idempotency-Key` is
/// reported "may have been sent" and not sent again; with the key, or
/// `resend_on_resume: true`, it is sent again; and `--resend-uncertain` sends the uncertain
/// ones when the run goes on, the list's GET read back, not sent again.
@Suite(
    "Requests not safe to send twice, a sending process SIGKILLed: the same in a state file and in PostgreSQL",
    .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct AtMostOnceAcrossStoresTests {
    /// Where the run is kept.
    enum Store: String, Sendable, CustomTestStringConvertible {
        case file, postgres
        var testDescription: String { self == .file ? "--state FILE" : "--state postgres://…" }
    }

    /// The stores this machine has: the file always, PostgreSQL when `ORCHESTRA_POSTGRES_URL`
    /// names one (`eval "$(Scripts/postgres.sh start)"`).
    static let stores: [Store] =
        ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] == nil ? [.file] : [.file, .postgres]

    /// What a step's POST carries, and what becomes of it after its sender is killed.
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
        "the sender killed with POSTs in flight: unkeyed ones may have been sent and are not sent again, keyed ones are",
        .enabled(if: ExitTests.areEnabled), arguments: stores, scenarios)
    func senderKilledWithPostsInFlight(_ store: Store, _ scenario: Scenario) async throws {
        try await withDemoServer { server in
            let file = try Self.workflow(base: server.baseURL, fields: scenario.fields)
            try await Self.withStore(store) { state, schema in
                let paths = (0..<Self.count).map { "/gated/charge-\($0)" }
                let run = ["run", file, "--no-color"] + state
                server.closeGate()
                // The list, then every POST held at the server by the closed gate: all in flight;
                // then the process sending them is killed, and the gate opened.
                let first: ProcessOutput
                var workers: [RunningOrchestra] = []
                if let schema {
                    // The coordinator waits while a worker is killed and another takes over.
                    let killed = try DistributedRunTests.worker(schema, lease: 2)
                    let coordinator = try OrchestraExecutable.start(run)
                    try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 1 + Self.count) }
                    killed.child.send(SIGKILL)
                    _ = await killed.finish(limit: .seconds(30))
                    server.openGate()
                    workers.append(try DistributedRunTests.worker(schema, lease: 2))
                    first = await coordinator.finish(limit: .seconds(120))
                } else {
                    // The run itself is killed, and started again on its file.
                    let killed = try OrchestraExecutable.start(run)
                    try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 1 + Self.count) }
                    killed.child.send(SIGKILL)
                    _ = await killed.finish(limit: .seconds(30))
                    server.openGate()
                    first = try await OrchestraExecutable.run(run, limit: .seconds(120))
                }
                // `orchestra status` judges the steps alike in both stores: the same table, the same JSON.
                let (table, steps) = try await Self.status(state: state, schema: schema)
                let charge = steps.last ?? [:]
                if scenario.resent {
                    #expect(first.status == 0, "\(first)")
                    #expect(first.stdout.contains("\(Self.count) requests sent, \(Self.count) succeeded"), "\(first)")
                    #expect(paths.allSatisfy { server.arrivals(of: $0) == 2 }, "\(paths.map(server.arrivals(of:)))")
                    #expect(table.last == "\(Self.count) 0 0 0 of \(Self.count)", "\(table)")
                    #expect(charge["succeeded"] as? Int == Self.count && charge["done"] as? Bool == true, "\(steps)")
                    await DistributedRunTests.stop(workers)
                    return
                }
                #expect(first.status == 1, "\(first)")
                #expect(first.stdout.contains("may have been sent: in flight when"), "\(first)")
                #expect(first.stdout.contains("is not safe to send twice, so it was not sent again"), "\(first)")
                #expect(paths.allSatisfy { server.arrivals(of: $0) == 1 }, "\(paths.map(server.arrivals(of:)))")
                #expect(table == ["1 0 0 0", "0 0 \(Self.count) 0 of \(Self.count)"], "\(table)")
                #expect(steps.compactMap { $0["id"] as? String } == ["list", "charge"], "\(steps)")
                #expect(steps.first?["done"] as? Bool == true, "\(steps)")
                #expect(
                    charge["total"] as? Int == Self.count && charge["succeeded"] as? Int == 0
                        && charge["failed"] as? Int == 0 && charge["may_have_been_sent"] as? Int == Self.count
                        && charge["pending"] as? Int == 0 && charge["done"] as? Bool == false, "\(steps)")

                // Going on with the run, --resend-uncertain sends them again; the list is read back.
                let again = try await OrchestraExecutable.run(run + ["--resend-uncertain"], limit: .seconds(120))
                await DistributedRunTests.stop(workers)
                #expect(again.status == 0, "\(again)")
                #expect(paths.allSatisfy { server.arrivals(of: $0) == 2 }, "\(paths.map(server.arrivals(of:)))")
                #expect(server.arrivals(of: "/list/\(Self.count)") == 1)
            }
        }
    }

    @Test("--resend-uncertain with --state postgres://… needs the --run-id of the run to go on with")
    func resendUncertainNeedsARunID() async throws {
        let file = try Self.workflow(base: URL(string: "http://127.0.0.1:1")!, fields: "")
        let run = try await OrchestraExecutable.run([
            "run", file, "--state", "postgres://orchestra@127.0.0.1:1/postgres", "--resend-uncertain",
        ])
        #expect(run.status == 2, "\(run)")
        #expect(run.stderr.contains("--resend-uncertain goes on with a run: give its --run-id"), "\(run)")
    }

    /// What `orchestra status` says of the run's steps: the figures of each row of its step
    /// table (succeeded, failed, may have been sent, pending; the step's name and mark left
    /// out) and its JSON `steps`. A state file's, or the PostgreSQL run `charges`'s.
    static func status(state: [String], schema: String?) async throws -> (table: [String], steps: [[String: Any]]) {
        let arguments =
            schema.map { ["status", "--state", DistributedRunTests.url, "--schema", $0, "--run", "charges"] }
            ?? ["status", "--state", state[1]]
        let text = try await OrchestraExecutable.run(arguments + ["--no-color"])
        let lines = text.stdout.split(separator: "\n").map(String.init)
        let header = try #require(lines.firstIndex { $0.contains("may have been sent") }, "\(text)")
        let table = lines[(header + 1)...].prefix { ["✓", "✗", "…"].contains($0.first.map(String.init)) }.map {
            $0.split(separator: " ").dropFirst(2).joined(separator: " ")
        }
        #expect(lines.contains("1 of 2 steps done") || lines.contains("2 of 2 steps done"), "\(text)")
        let json = try await OrchestraExecutable.run(arguments + ["--output", "json"])
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let holder = schema == nil ? document : try #require((document["runs"] as? [[String: Any]])?.first)
        return (table, try #require(holder["steps"] as? [[String: Any]], "\(json)"))
    }

    /// Runs `body` with the arguments of `orchestra run` that keep its run in a new store of
    /// kind `store` (`--state` and, for PostgreSQL, `--schema` and the `--run-id` to go on with),
    /// and the PostgreSQL schema (`nil` for a file).
    static func withStore(
        _ store: Store, _ body: @escaping @Sendable (_ arguments: [String], _ schema: String?) async throws -> Void
    ) async throws {
        switch store {
        case .file:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "orchestra-at-most-once-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await body(["--state", folder.appendingPathComponent("run.db").path], nil)
        case .postgres:
            try await DistributedRunTests.withSchema { schema in
                try await body(
                    ["--state", DistributedRunTests.url, "--schema", schema, "--run-id", "charges"], schema)
            }
        }
    }
}
