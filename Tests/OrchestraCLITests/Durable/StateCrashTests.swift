import Foundation
import GRDB
@_spi(Simulation) import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resumable runs against real crashes: `orchestra run --state` sends a 5,000-element
/// `for_each` to a demo server in this process, is killed with SIGKILL at five random moments
/// (each once the server has received a random number of requests more), and is started again
/// each time with the same state file, then once more to the end.
///
/// Each run gets its number as `--var run=K`, which goes into its requests' paths
/// (`/anything/items/E/run/K`): the server then counts each run's requests apart, those still
/// arriving after a kill included, so the elements in flight at each kill are known exactly.
/// The workflow file, and so its state file, is the same for every run.
@Suite("orchestra run --state killed mid-run", .timeLimit(.minutes(10)), .takesTurns)
struct StateCrashTests {
    static let elementCount = 5_000
    static let kills = 5
    static let limit = 32
    /// A real-time guard for each wait on a child process (far longer than a correct run; not a
    /// timing assertion).
    static let guardLimit = Duration.seconds(180)

    /// The list, then one POST per element. Its `Idempotency-Key` makes the POST safe to send
    /// twice, so an element in flight at a kill is sent again by the next run.
    static let workflow = """
        name: Crash test
        vars: { base: "http://127.0.0.1", run: "0" }
        limit: \(limit)
        steps:
          - id: list
            url: "{{vars.base}}/list/\(elementCount)"
            captures: { items: $.items }
          - id: each
            for_each: "{{list.items}}"
            method: POST
            url: "{{vars.base}}/anything/items/{{item}}/run/{{vars.run}}"
            headers: { Idempotency-Key: "item-{{item}}" }
        """

    /// The path of element `element`'s request in run `run`.
    static func path(of element: Int, run: Int) -> String {
        "/anything/items/\(element)/run/\(run)"
    }

    /// What the state file records, read while no run uses it.
    struct Records {
        /// The `each` step's records: element index → state, and how many rows there are.
        var elements: [Int: String] = [:]
        var elementRows = 0
        /// The `list` step's records: (item, state).
        var list: [(item: Int, state: String)] = []

        /// The elements recorded as succeeded.
        var succeeded: Set<Int> { Set(elements.filter { $0.value == "succeeded" }.keys) }
    }

    static func records(in path: String) throws -> Records {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        let database = try DatabaseQueue(path: path, configuration: configuration)
        return try database.read { db in
            var records = Records()
            for row in try Row.fetchAll(db, sql: "SELECT step, item, state FROM records") {
                let (step, item, state): (String, Int, String) = (row["step"], row["item"], row["state"])
                switch step {
                case "each":
                    records.elements[item] = state
                    records.elementRows += 1
                case "list": records.list.append((item, state))
                default: Issue.record("a record of an unknown step \(step)")
                }
            }
            return records
        }
    }

    /// Waits until `server` has received `count` requests in all; `false` if `child` ended
    /// first, or ``guardLimit`` passed, or the test was cancelled.
    static func requests(_ count: Int, reachedBy server: DemoServer, before child: ChildProcess) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await server.requests(reaching: count)) != nil }
            group.addTask {
                _ = await child.exitStatus(within: guardLimit)
                return false
            }
            let reached = await group.next() ?? false
            group.cancelAll()
            return reached
        }
    }

    /// A few of `elements`, for messages.
    static func some(_ elements: some Collection<Int>) -> String {
        let shown = elements.sorted().prefix(10).map(String.init).joined(separator: ", ")
        return elements.count > 10 ? "\(shown)… (\(elements.count))" : "[\(shown)]"
    }

    @Test(
        "after five kills and a last run, every element succeeded, is recorded once, and reached the server at most once more than the kills it was in flight at",
        .enabled(if: ExitTests.areEnabled)
    )
    func everyElementSucceedsOnceAfterFiveKills() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-state-crash-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("crash.yaml")
        try Data(Self.workflow.utf8).write(to: file)
        let state = folder.appendingPathComponent("crash.state").path
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        // Each kill comes 300 to 800 requests after the previous one: five of them reach at most
        // 4,000 elements, so every run is killed before it can end.
        let gaps = (0..<Self.kills).map { _ in Int.random(in: 300...800, using: &random) }

        try await withDemoServer { server in
            func arguments(run: Int) -> [String] {
                [
                    "run", file.path, "--state", state, "--var", "base=\(server.baseURL.absoluteString)",
                    "--var", "run=\(run)", "--output", "json",
                ]
            }

            var succeededAfterKill: [Set<Int>] = []
            for run in 1...Self.kills {
                let threshold = server.requestCount + gaps[run - 1]
                let running = try OrchestraExecutable.start(arguments(run: run))
                let reached = await Self.requests(threshold, reachedBy: server, before: running.child)
                // Otherwise it has ended (its id may be another process's now), or `finish` kills it.
                if reached { running.child.send(SIGKILL) }
                let output = await running.finish(limit: .seconds(30))
                #expect(reached, "seed \(seed): run \(run) ended before request \(threshold): \(output)")
                #expect(output.status == -SIGKILL, "seed \(seed): run \(run): \(output)")
                succeededAfterKill.append(try Self.records(in: state).succeeded)
            }

            let last = try await OrchestraExecutable.run(arguments(run: Self.kills + 1), limit: Self.guardLimit)
            #expect(last.status == 0, "seed \(seed): the last run: \(last)")
            let document = try JSONSerialization.jsonObject(with: Data(last.stdout.utf8)) as? [String: Any]
            let summary = document?["summary"] as? [String: Any]
            #expect(summary?["ok"] as? Bool == true, "seed \(seed): the last run: \(last)")

            // Recorded once: one record per element, all succeeded, and the list's one record.
            let records = try Self.records(in: state)
            #expect(records.elementRows == Self.elementCount, "seed \(seed)")
            #expect(Set(records.elements.keys) == Set(0..<Self.elementCount), "seed \(seed)")
            let notSucceeded = records.elements.filter { $0.value != "succeeded" }.keys
            #expect(notSucceeded.isEmpty, "seed \(seed): not succeeded: \(Self.some(notSucceeded))")
            #expect(records.list.count == 1 && records.list.first?.item == -1, "seed \(seed): \(records.list)")
            #expect(records.list.first?.state == "succeeded", "seed \(seed): \(records.list)")
            // The list's record is committed before any element is sent: it is never read again.
            #expect(server.arrivals(of: "/list/\(Self.elementCount)") == 1, "seed \(seed)")

            // In flight at kill K: reached the server in run K, not recorded as succeeded after it.
            var inFlightAtKills = [Int](repeating: 0, count: Self.elementCount)
            var inFlightPerKill = [Int](repeating: 0, count: Self.kills)
            var neverArrived: [Int] = []
            var beyondBound: [String] = []
            var sentAgainAfterSuccess: [String] = []
            var extra = 0
            for element in 0..<Self.elementCount {
                let arrivals = (1...Self.kills + 1).map { server.arrivals(of: Self.path(of: element, run: $0)) }
                for kill in 0..<Self.kills where arrivals[kill] > 0 && !succeededAfterKill[kill].contains(element) {
                    inFlightAtKills[element] += 1
                    inFlightPerKill[kill] += 1
                }
                // What a kill left recorded as succeeded is never sent again.
                if let kill = (0..<Self.kills).first(where: { succeededAfterKill[$0].contains(element) }),
                    arrivals[(kill + 1)...].contains(where: { $0 > 0 })
                {
                    sentAgainAfterSuccess.append("\(element): \(arrivals)")
                }
                let total = arrivals.reduce(0, +)
                if total == 0 { neverArrived.append(element) }
                if total > 1 + inFlightAtKills[element] {
                    beyondBound.append("\(element): \(arrivals), in flight at \(inFlightAtKills[element]) kills")
                }
                extra += max(0, total - 1)
            }
            #expect(neverArrived.isEmpty, "seed \(seed): never sent: \(Self.some(neverArrived))")
            #expect(beyondBound.isEmpty, "seed \(seed): sent too often (arrivals per run): \(beyondBound.prefix(10))")
            #expect(
                sentAgainAfterSuccess.isEmpty,
                "seed \(seed): sent again after a recorded success (arrivals per run): \(sentAgainAfterSuccess.prefix(10))"
            )
            // The extra requests are the elements in flight at the kills, and a kill costs only
            // those: at most `limit` requests being sent, plus those that ended just before it
            // whose records were not yet committed (the writer commits continuously; a slow disk
            // lets a few more end during one commit), never a run's worth (300 or more).
            #expect(
                extra <= inFlightPerKill.reduce(0, +) && inFlightPerKill.allSatisfy { $0 <= 8 * Self.limit },
                "seed \(seed): \(extra) extra requests; in flight per kill: \(inFlightPerKill)")

            let status = try await OrchestraExecutable.run(["status", "--state", state, "--output", "json"])
            #expect(status.status == 0, "\(status)")
            let report = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            #expect(report?["complete"] as? Bool == true, "\(status)")
        }
    }
}
