import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraDurable
import OrchestraPostgres
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@Suite("PostgreSQL for the tests", .takesTurns)
struct PostgresAvailabilityTests {
    @Test("CI runs the PostgreSQL tests (.ci/run starts a server)")
    func continuousIntegrationHasAServer() {
        #expect(
            PostgresTestServer.url != nil || !PostgresTestServer.isCI,
            "CI=true but ORCHESTRA_POSTGRES_URL is not set: the PostgreSQL tests would not run")
    }
}

@Suite(
    "PostgresJobStore", .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresJobStoreTests {
    static var url: String { PostgresTestServer.url ?? "" }
    static let add = JobKind<[Int], Int>("add")

    /// The test server's URL with `change` applied to its parts.
    static func url(_ change: (inout URLComponents) -> Void) -> String {
        var components = URLComponents(string: url)!
        change(&components)
        return components.string!
    }

    @Test(
        "a URL that cannot be used is refused naming what is wrong, without its password",
        arguments: [
            ("http://user:pw@127.0.0.1/db", "has the scheme 'http'"),
            ("postgres:///db", "has no host"),
            ("postgres://127.0.0.1/db", "has no user name"),
            ("postgres://u:secret@127.0.0.1/db?sslmode=maybe", "has sslmode=maybe"),
            ("not a url at all", "is not a URL"),
        ])
    func badURLs(url: String, problem: String) {
        let error = #expect(throws: DurableError.self) { try PostgresJobStore.configuration(url: url) }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("secret") == false)
    }

    @Test func aWrongPasswordIsAConnectionErrorNamingTheServer() async throws {
        let wrong = Self.url { $0.password = "not-the-password" }
        let error = await #expect(throws: DurableError.self) {
            try await PostgresJobStore.withStore(url: wrong) { _ in }
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("password authentication failed") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("not-the-password") == false)
    }

    @Test func aServerThatIsNotThereIsUnreachable() async throws {
        // Port 9 (discard) on loopback: nothing listens there.
        let nowhere = Self.url { $0.port = 9 }
        let error = await #expect(throws: DurableError.self) {
            try await PostgresJobStore.withStore(url: nowhere) { _ in }
        }
        #expect(error?.code == .storeUnreachable)
        #expect(error?.message.contains("127.0.0.1:9") == true, "\(error?.message ?? "")")
    }

    /// A server that cannot be reached is tried again for as long as the caller waits, said
    /// once, and then an error that says how long it waited.
    @Test func aServerThatIsNotThereIsWaitedForAsLongAsAsked() async throws {
        let nowhere = Self.url { $0.port = 9 }
        let notes = Locked<[PostgresConnectivity]>([])
        let error = await #expect(throws: DurableError.self) {
            try await PostgresJobStore.withStore(
                url: nowhere, waitingUpTo: .milliseconds(600),
                onConnectivity: { note in notes.withLock { $0.append(note) } },
                { _ in })
        }
        #expect(error?.code == .storeUnreachable)
        #expect(error?.message.contains("(waited ") == true, "\(error?.message ?? "")")
        let said = notes.withLock { $0 }
        #expect(said.count == 1, "\(said)")
        if case .unreachable(let reason) = said.first {
            #expect(reason.contains("127.0.0.1:9"), "\(reason)")
        } else {
            Issue.record("not said: \(said)")
        }
    }

    @Test func aSchemaNameThatIsNotAPlainIdentifierIsRefused() async throws {
        let error = await #expect(throws: DurableError.self) {
            try await PostgresJobStore.withStore(url: Self.url, schema: "jobs; DROP TABLE x") { _ in }
        }
        #expect(error?.message.contains("not a plain identifier") == true)
    }

    @Test func aSchemaOfAnotherProgramOrFromANewerVersionIsRefused() async throws {
        try await withTemporaryStore(.postgres) { file in
            let client = try #require(file.client)
            try await client.query("CREATE SCHEMA \(unescaped: file.schema)")
            try await client.query("CREATE TABLE \(unescaped: file.schema).customers (name TEXT)")
            let foreign = await #expect(throws: DurableError.self) { try await file.open() }
            #expect(foreign?.code == .foreignDatabase)
            #expect(foreign?.message.contains("customers") == true)

            try await client.query("DROP TABLE \(unescaped: file.schema).customers")
            _ = try await file.open()
            try await client.query(
                "UPDATE \(unescaped: file.schema).orchestra_store SET value = '99' WHERE key = 'schema'")
            let newer = await #expect(throws: DurableError.self) { try await file.open() }
            #expect(newer?.code == .schemaFromNewerVersion)
            #expect(newer?.message.contains("schema version 99") == true)
        }
    }

    @Test func manyWorkersOnOneRunNeverExceedItsLimitOrAResourcesLimitTogether() async throws {
        let workers = 4
        let jobCount = 300
        let (limit, hostLimit) = (6, 2)
        try await withTemporaryStore(.postgres) { file in
            let running = Locked((total: 0, host: 0, peak: 0, peakHost: 0))
            var queues: [DurableQueue] = []
            for index in 0..<workers {
                let store = try PostgresJobStore(client: file.client!, schema: file.schema, pollInterval: .seconds(1))
                try await store.migrate()
                let queue = DurableQueue(store: store, worker: "worker-\(index)")
                queue.register(Self.add) { input, context in
                    let usesHost = input[0] % 3 == 0
                    running.withLock { state in
                        state.total += 1
                        if usesHost { state.host += 1 }
                        state.peak = max(state.peak, state.total)
                        state.peakHost = max(state.peakHost, state.host)
                    }
                    for _ in 0..<20 { await Task.yield() }
                    running.withLock { state in
                        state.total -= 1
                        if usesHost { state.host -= 1 }
                    }
                    return input[0]
                }
                queues.append(queue)
            }
            var graph = DurableGraph()
            for index in 0..<jobCount {
                // Every third job uses the host; some wait for an earlier one.
                let after = index >= 10 && index % 7 == 0 ? ["j\(index - 10)"] : []
                try graph.add(
                    "j\(index)", Self.add, input: [index], after: after,
                    options: .init(resources: index % 3 == 0 ? ["host"] : []))
            }
            try await queues[0].submit(graph, runID: "shared", limit: limit, resourceLimits: ["host": hostLimit])
            let all = queues
            try await withHangGuard {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for queue in all { group.addTask { try await queue.drain(limit: 4) } }
                    try await group.waitForAll()
                }
            }
            let peaks = running.withLock { ($0.peak, $0.peakHost) }
            #expect(peaks.0 <= limit, "at most \(limit) jobs of the run at once across the workers")
            #expect(peaks.1 <= hostLimit, "at most \(hostLimit) jobs using the host at once")
            #expect(peaks.0 > 1, "the workers did run jobs side by side")
            #expect(try await queues[0].run("shared").state == .succeeded)
            let jobs = try await queues[0].jobs(of: "shared")
            #expect(jobs.count == jobCount)
            #expect(jobs.allSatisfy { $0.state == .succeeded && $0.attempts == 1 })
        }
    }

    /// Schema 4: PostgreSQL keeps no statistics of `run_id`, and a store of schema 3 loses those
    /// it had. A new run is absent from them, and the planner estimated it at one row: it read a
    /// whole run to find a few of its jobs, the cost of a run growing with the square of its
    /// size (BENCHMARKS.md, "Throughput with workers").
    @Test func runIDsHaveNoPlannerStatistics() async throws {
        try await withTemporaryStore(.postgres) { file in
            let client = try #require(file.client)
            let schema = file.schema
            _ = try await file.open()
            func statistics() async throws -> (targets: [Int], gathered: Int) {
                var targets: [Int] = []
                for try await target in try await client.query(
                    """
                    SELECT a.attstattarget::INTEGER FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                    JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = \(schema) AND a.attname = 'run_id'
                        AND c.relname IN ('jobs', 'dependencies', 'job_resources') ORDER BY c.relname
                    """
                ).decode(Int.self) { targets.append(target) }
                var gathered = 0
                for try await count in try await client.query(
                    "SELECT COUNT(*)::INTEGER FROM pg_stats WHERE schemaname = \(schema) AND attname = 'run_id'"
                ).decode(Int.self) { gathered = count }
                return (targets, gathered)
            }
            // A store of schema 3, with statistics gathered.
            try await client.query(
                "INSERT INTO \(unescaped: schema).runs (id, state, job_limit, fail_fast, fingerprint, created) VALUES ('r', 'running', 1, false, '', 0)"
            )
            try await client.query(
                "INSERT INTO \(unescaped: schema).jobs (run_id, id, position, kind, input, state, waiting_on, priority, critical_path, run_at, attempts, max_attempts, initial_delay_ns, multiplier, max_delay_ns) SELECT 'r', 'j' || i, i, 'k', '\\x00', 'ready', 0, 0, 1, 0, 0, 1, 0, 1, 0 FROM generate_series(1, 500) i"
            )
            for table in ["jobs", "dependencies", "job_resources"] {
                try await client.query(
                    PostgresQuery(unsafeSQL: "ALTER TABLE \(schema).\(table) ALTER COLUMN run_id SET STATISTICS -1"))
            }
            try await client.query(PostgresQuery(unsafeSQL: "ANALYZE \(schema).jobs"))
            try await client.query("UPDATE \(unescaped: schema).orchestra_store SET value = '3' WHERE key = 'schema'")
            #expect(try await statistics().gathered >= 1, "the test's own statistics were gathered")

            _ = try await file.open()
            try await client.query(PostgresQuery(unsafeSQL: "ANALYZE \(schema).jobs"))
            let after = try await statistics()
            #expect(after.targets == [0, 0, 0])
            #expect(after.gathered == 0)
        }
    }

    @Test func jobsLookedUpByIDComeOnceEachInTheirOrderAndUnknownIDsAreLeftOut() async throws {
        try await withTemporaryStore(.postgres) { file in
            let queue = DurableQueue(store: try await file.open(), worker: "w")
            var graph = DurableGraph()
            for index in 0..<50 { try graph.add("j\(index)", Self.add, input: [index]) }
            try await queue.submit(graph, runID: "run", limit: 4)
            let store = try await file.open()
            let jobs = try await store.jobs(of: "run", ids: ["j42", "j7", "j42", "nope", "j19"])
            #expect(jobs.map(\.id) == ["j7", "j19", "j42"])
            #expect(try await store.jobs(of: "other", ids: ["j7"]).isEmpty)
            #expect(try await store.jobs(of: "run").count == 50)
        }
    }
}
