import Foundation
import OrchestraDemoServer
import OrchestraDurable
import OrchestraPostgres
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `orchestra run FILE --state postgres://…` hands its requests to `orchestra worker`
/// processes through a PostgreSQL store, against the demo server.
@Suite(
    "orchestra run --state postgres://… and orchestra worker",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(10)), .takesTurns)
struct DistributedRunTests {
    static let url = ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] ?? ""

    /// A schema of its own for the test, dropped after `body`.
    static func withSchema<T>(_ body: (String) async throws -> T) async throws -> T {
        let schema = "dist_\(UInt32.random(in: 0...UInt32.max))"
        do {
            let result = try await body(schema)
            try await drop(schema)
            return result
        } catch {
            try? await drop(schema)
            throw error
        }
    }

    /// A demo server and a schema of the test's own, for the duration of `body`.
    static func withServerAndSchema(
        _ body: @escaping @Sendable (DemoServer, String) async throws -> Void
    ) async throws {
        try await withDemoServer { server in
            try await withSchema { schema in try await body(server, schema) }
        }
    }

    static func drop(_ schema: String) async throws {
        try await PostgresJobStore.withStore(url: url, schema: schema, pollInterval: nil) { store in
            _ = try await store.client.query("DROP SCHEMA IF EXISTS \(unescaped: schema) CASCADE")
        }
    }

    /// A list of `count` items, then one request per item to `/payload/<item>` (each `latency`
    /// ms), at most `hostLimit` at once against the server.
    static func workflow(base: URL, count: Int, hostLimit: Int, latency: Int) throws -> String {
        try WorkflowCommandTests.workflowFile(
            """
            name: Distributed
            vars: { base: "\(base.absoluteString)" }
            limit: 16
            hosts: { "\(base.host!):\(base.port!)": \(hostLimit) }
            steps:
              - { id: list, url: "{{vars.base}}/list/\(count)", captures: { items: $.items } }
              - id: each
                for_each: "{{list.items}}"
                url: "{{vars.base}}/payload/{{item}}?latency_ms=\(latency)"
                expect: [200]
            """)
    }

    /// A worker on `schema`: at most 4 requests at once, 2-second leases unless told otherwise
    /// (`nil`: the default `--lease`).
    static func worker(_ schema: String, lease: Int? = 2, url: String = Self.url) throws -> RunningOrchestra {
        try OrchestraExecutable.start(
            ["worker", "--state", url, "--schema", schema, "--limit", "4"] + (lease.map { ["--lease", "\($0)"] } ?? []))
    }

    /// `orchestra run file` as the coordinator of run `runID` on `schema`.
    static func coordinator(_ file: String, schema: String, runID: String, url: String = Self.url) -> [String] {
        ["run", file, "--state", url, "--schema", schema, "--run-id", runID, "--no-color"]
    }

    /// Runs `file` as the coordinator of run `runID` with `workers` workers, which are stopped
    /// (and checked) once it has ended.
    static func run(
        _ file: String, schema: String, runID: String, workers count: Int
    ) async throws
        -> ProcessOutput
    {
        let workers = try (0..<count).map { _ in try worker(schema) }
        let run = try await OrchestraExecutable.run(
            coordinator(file, schema: schema, runID: runID), limit: .seconds(240))
        await stop(workers)
        return run
    }

    /// Stops `workers` gracefully (SIGTERM) and checks that each says so and exits 0.
    static func stop(_ workers: [RunningOrchestra]) async {
        for worker in workers { worker.child.send(SIGTERM) }
        for worker in workers {
            let output = await worker.finish(limit: .seconds(60))
            #expect(output.status == 0, "\(output)")
            #expect(output.stdout.contains("stopped: "), "\(output)")
        }
    }

    @Test("workers send the run's requests once each, within the workflow's host limit across all of them")
    func workersShareARun() async throws {
        try await Self.withServerAndSchema { server, schema in
            let file = try Self.workflow(base: server.baseURL, count: 300, hostLimit: 3, latency: 5)
            let run = try await Self.run(file, schema: schema, runID: "shared", workers: 2)
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("300 requests sent, 300 succeeded"), "\(run)")
            #expect(run.stdout.contains("state: run 'shared' closed · 301 requests sent by workers"), "\(run)")
            #expect(!run.stdout.contains(Self.url), "the URL, with its password, was printed")
            #expect(server.peakInFlight <= 3, "the host limit was exceeded: \(server.peakInFlight) at once")
            let repeated = (0..<300).filter { server.arrivals(of: "/payload/\($0)") != 1 }
            #expect(repeated.isEmpty, "items not sent exactly once: \(repeated.prefix(10))")

            let status = try await OrchestraExecutable.run([
                "status", "--state", Self.url, "--schema", schema, "--run", "shared", "--no-color",
            ])
            #expect(status.status == 0, "\(status)")
            let again = try await OrchestraExecutable.run(Self.coordinator(file, schema: schema, runID: "shared"))
            #expect(again.status == 2, "\(again)")
            #expect(again.stderr.contains("run 'shared' in schema '\(schema)'"), "\(again)")
            #expect(again.stderr.contains("has ended (succeeded)"), "\(again)")
        }
    }

    @Test("an ended run's requests and responses, credentials included, leave the store")
    func anEndedRunLeavesNoCredentialsInTheStore() async throws {
        try await Self.withServerAndSchema { server, schema in
            let key = "k3y-\(UUID().uuidString)"
            let file = try WorkflowCommandTests.workflowFile(
                """
                name: Credentials
                vars: { base: "\(server.baseURL.absoluteString)", key: "\(key)" }
                secrets: [key]
                steps:
                  - id: echo
                    method: POST
                    url: "{{vars.base}}/anything?api_key={{vars.key}}"
                    headers: { Authorization: "Bearer {{vars.key}}", Idempotency-Key: "echo-1" }
                    body: "password={{vars.key}}"
                    expect: [200]
                """)
            // Kept while the run goes on: the worker sends what the store holds.
            let run = try await Self.run(file, schema: schema, runID: "credentials", workers: 1)
            #expect(run.status == 0, "\(run)")
            #expect(!run.stdout.contains(key) && !run.stderr.contains(key), "\(run)")
            let (jobs, holding) = try await PostgresJobStore.withStore(url: Self.url, schema: schema, pollInterval: nil)
            {
                store in
                let rows = try await store.client.query(
                    """
                    SELECT COUNT(*)::INTEGER,
                        COUNT(*) FILTER (WHERE position(convert_to(\(key), 'UTF8') IN input) > 0
                            OR position(convert_to(\(key), 'UTF8') IN coalesce(output, ''::BYTEA)) > 0
                            OR position(\(key) IN coalesce(error, '')) > 0)::INTEGER
                    FROM \(unescaped: schema).jobs
                    """
                ).decode((Int, Int).self)
                var found = (0, 0)
                for try await row in rows { found = row }
                return found
            }
            #expect(jobs == 1, "the run's job is kept, with its state")
            #expect(holding == 0, "the key is in the store after the run ended")
        }
    }

    // Kills and restarts of sanitized processes starve a two-core machine: left to the plain pass.
    // PostgreSQL is restarted: a cluster of the test's own, so that no other test's processes
    // find the shared one down.
    @Test(
        "workers SIGKILLed ten times and PostgreSQL restarted: every request succeeds, the host limit holds, and only requests a killed worker held are sent again",
        .enabled(if: ExitTests.areEnabled),
        .enabled(if: PostgresCluster.directory != nil, "no cluster of the tests' own: Scripts/postgres.sh start"))
    func workersKilled() async throws {
        try await withDemoServer { server in
            try await PostgresCluster.withOwnCluster { cluster in
                try await Self.workersKilled(server: server, cluster: cluster)
            }
        }
    }

    static func workersKilled(server: DemoServer, cluster: PostgresCluster) async throws {
        let schema = "dist_killed"
        let count = 1_500
        let file = try Self.workflow(base: server.baseURL, count: count, hostLimit: 3, latency: 10)
        var workers = try (0..<3).map { _ in try Self.worker(schema, url: cluster.url) }
        let coordinator = try OrchestraExecutable.start(
            Self.coordinator(file, schema: schema, runID: "killed", url: cluster.url))
        var kills = 0
        for round in 1...10 {
            // A kill every 100 requests or so, at a random one.
            try await withHangGuard(.seconds(120)) {
                try await server.requests(reaching: round * 110 + Int.random(in: 0..<40))
            }
            let victim = Int.random(in: 0..<workers.count)
            workers[victim].child.send(SIGKILL)
            _ = await workers[victim].finish(limit: .seconds(30))
            kills += 1
            if round == 5 {
                // PostgreSQL restarted (immediate mode: like a crash) under the
                // coordinator and the two other workers; the killed one starts after.
                let (status, errors) = try await cluster.restart()
                #expect(status == 0, "the server's restart: \(errors)")
            }
            workers[victim] = try Self.worker(schema, url: cluster.url)
        }
        let run = await coordinator.finish(limit: .seconds(400))
        await Self.stop(workers)
        #expect(kills == 10)
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.contains("\(count) requests sent, \(count) succeeded"), "\(run)")
        #expect(server.peakInFlight <= 3, "the host limit was exceeded: \(server.peakInFlight) at once")
        let arrivals = (0..<count).map { server.arrivals(of: "/payload/\($0)") }
        #expect(arrivals.allSatisfy { $0 >= 1 }, "a request was lost")
        // Sent again: only what a killed worker had claimed, at most its 4 at a time.
        let again = arrivals.reduce(0) { $0 + $1 - 1 }
        #expect(again <= kills * 4, "\(again) requests sent again after \(kills) kills")
    }

    @Test(
        "a coordinator killed mid-run and started again with its --run-id reads back what the workers did",
        .enabled(if: ExitTests.areEnabled))
    func coordinatorResumes() async throws {
        try await Self.withServerAndSchema { server, schema in
            let count = 400
            let file = try Self.workflow(base: server.baseURL, count: count, hostLimit: 4, latency: 5)
            // No worker dies here, so none of its requests may be claimed again: a lease long
            // enough that a starved machine cannot let one lapse. With 2-second leases (renewed
            // every second) one CI run, 4.6 times slower than a quiet machine, saw one request
            // sent twice; a lapsed lease is the way at-least-once delivery allows that.
            let workers = try [Self.worker(schema, lease: 60)]
            let arguments = Self.coordinator(file, schema: schema, runID: "resumed")
            let first = try OrchestraExecutable.start(arguments)
            try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 150) }
            first.child.send(SIGKILL)
            _ = await first.finish(limit: .seconds(30))

            let second = try await OrchestraExecutable.run(arguments, limit: .seconds(240))
            await Self.stop(workers)
            #expect(second.status == 0, "\(second)")
            #expect(second.stdout.contains("run 'resumed' in schema '\(schema)'"), "\(second)")
            #expect(second.stdout.contains("goes on"), "\(second)")
            #expect(second.stdout.contains("read back from an earlier coordinator's run"), "\(second)")
            // The requests the first coordinator handed over were sent by the worker, once.
            let repeated = (0..<count).filter { server.arrivals(of: "/payload/\($0)") != 1 }
            #expect(repeated.isEmpty, "items not sent exactly once: \(repeated.prefix(10))")
        }
    }

    @Test(
        "a coordinator started again on its --run-id with an edited workflow file is refused, unless --force",
        .enabled(if: ExitTests.areEnabled))
    func runIdentity() async throws {
        try await Self.withServerAndSchema { server, schema in
            let first = try Self.workflow(base: server.baseURL, count: 20, hostLimit: 2, latency: 1)
            let edited = try Self.workflow(base: server.baseURL, count: 21, hostLimit: 2, latency: 1)
            // No worker yet: the first coordinator opens the run and waits for one; it dies there.
            let running = try OrchestraExecutable.start(Self.coordinator(first, schema: schema, runID: "identity"))
            let opened = await running.child.standardOutput.wait(for: "state: run 'identity'", limit: .seconds(60))
            running.child.send(SIGKILL)
            let killed = await running.finish(limit: .seconds(30))
            #expect(opened, "\(killed)")

            // Before the fix the edited file was accepted silently, and the run mixed both.
            let refused = try await OrchestraExecutable.run(
                Self.coordinator(edited, schema: schema, runID: "identity"), limit: .seconds(60))
            #expect(refused.status == 2, "\(refused)")
            #expect(
                refused.stderr.contains(
                    "run 'identity' in schema '\(schema)'")
                    && refused.stderr.contains("was opened by another workflow file or another version of this one"),
                "\(refused)")
            #expect(!refused.stderr.contains(Self.url), "the URL, with its password, was printed")
            #expect(server.requestCount == 0, "a request was sent")

            let workers = try [Self.worker(schema)]
            let forced = try await OrchestraExecutable.run(
                Self.coordinator(edited, schema: schema, runID: "identity") + ["--force"], limit: .seconds(240))
            await Self.stop(workers)
            #expect(forced.status == 0, "\(forced)")
            #expect(forced.stdout.contains("not read back (--force)"), "\(forced)")
            #expect(forced.stdout.contains("21 requests sent, 21 succeeded"), "\(forced)")
        }
    }

    @Test(
        "a worker stopped with requests in flight counts them in its closing line",
        .enabled(if: ExitTests.areEnabled))
    func aStoppedWorkerCountsTheRequestsInFlight() async throws {
        try await Self.withServerAndSchema { server, schema in
            // The list, then 9 requests that each take 15 s: a worker of 9 sends them all at once
            // and is stopped with no grace period while they are in flight.
            let file = try Self.workflow(base: server.baseURL, count: 9, hostLimit: 9, latency: 15_000)
            let coordinator = try OrchestraExecutable.start(Self.coordinator(file, schema: schema, runID: "counted"))
            let worker = try OrchestraExecutable.start([
                "worker", "--state", Self.url, "--schema", schema, "--limit", "9", "--grace", "0",
            ])
            try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 10) }
            worker.child.send(SIGTERM)
            let stopped = await worker.finish(limit: .seconds(60))
            coordinator.child.send(SIGKILL)
            _ = await coordinator.finish(limit: .seconds(30))
            #expect(stopped.status == 0, "\(stopped)")
            // Before, the line counted only the requests whose response had come: "1 request sent".
            #expect(
                stopped.stdout.contains(
                    "stopped: 10 requests sent, 9 in flight when it stopped (given back unanswered)"),
                "\(stopped)")
        }
    }

    @Test("a request no server answers fails on the coordinator with the worker's reason, as it would locally")
    func unanswered() async throws {
        try await Self.withServerAndSchema { server, schema in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: up, url: "\(server.baseURL.absoluteString)/users/1" }
                  - { id: down, url: "http://127.0.0.1:1/nothing-listens" }
                """)
            let run = try await Self.run(file, schema: schema, runID: "refused", workers: 1)
            #expect(run.status == 1, "\(run)")
            #expect(run.stdout.contains("✓ up"), "\(run)")
            #expect(run.stdout.contains("connection refused by 127.0.0.1:1"), "\(run)")
            #expect(
                run.stdout.contains(
                    "state: run 'refused' closed · 2 requests sent by workers, 1 without a response"),
                "\(run)")
        }
    }

    @Test("a request the server never answers is given up on its worker too, and frees its host's place for the next")
    func abandonedRequest() async throws {
        try await Self.withServerAndSchema { server, schema in
            let base = server.baseURL
            // One request at a time to the host: the second waits for the place the first
            // holds in the store until its worker stops it at the steps' timeout.
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(base.absoluteString)" }
                hosts: { "\(base.host!):\(base.port!)": 1 }
                steps:
                  - id: paths
                    method: POST
                    url: "{{vars.base}}/echo"
                    body: { paths: ["/hang", "/users/1"] }
                    captures: { list: $.paths }
                  - id: each
                    for_each: "{{paths.list}}"
                    url: "{{vars.base}}{{item | raw}}"
                    timeout: 2s
                """)
            let run = try await Self.run(file, schema: schema, runID: "abandoned", workers: 1)
            #expect(run.status == 1, "\(run)")
            #expect(run.stdout.contains("2 requests sent, 1 succeeded"), "\(run)")
            #expect(run.stdout.contains("each[0]  GET \(base.absoluteString)/hang: timed out after 2 s"), "\(run)")
            #expect(server.arrivals(of: "/users/1") == 1, "\(run)")
        }
    }

    /// A coordinator of `file` started with no worker, whose note about that comes after
    /// `noteAfter` seconds without a claim (`ORCHESTRA_WORKER_NOTE_AFTER`).
    static func coordinatorAlone(
        _ file: String, schema: String, runID: String, noteAfter: Int
    ) throws -> RunningOrchestra {
        try OrchestraExecutable.start(
            Self.coordinator(file, schema: schema, runID: runID),
            environment: ["ORCHESTRA_WORKER_NOTE_AFTER": "\(noteAfter)"])
    }

    // The step's timeout bounds each attempt on a worker, not the wait for one: requests that
    // waited longer than it for a worker are sent once one comes. No real sleep: the
    // coordinator's note, due after 3 s without a claim, says when the requests have waited
    // more than the steps' 1-second timeout.
    @Test(
        "no worker for longer than the steps' timeout, then one: the coordinator says it waits for a worker, and every request succeeds"
    )
    func noWorkerForAWhile() async throws {
        try await Self.withServerAndSchema { server, schema in
            let base = server.baseURL.absoluteString
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: list, url: "\(base)/list/20", captures: { items: $.items }, timeout: 1s }
                  - id: each
                    for_each: "{{list.items}}"
                    url: "\(base)/payload/{{item}}"
                    timeout: 1s
                    expect: [200]
                """)
            let coordinator = try Self.coordinatorAlone(file, schema: schema, runID: "late", noteAfter: 3)
            let noted = await coordinator.child.standardError.wait(
                for: "waiting for a worker: none has claimed a request for ", limit: .seconds(30))
            #expect(noted, "no note about the missing worker: \(coordinator.child.standardError.text)")
            #expect(server.requestCount == 0)
            let workers = try [Self.worker(schema)]
            let run = await coordinator.finish(limit: .seconds(120))
            await Self.stop(workers)
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("20 requests sent, 20 succeeded"), "\(run)")
            #expect(!run.stdout.contains("timed out"), "\(run)")
            // After 3 s, or a little more on a starved machine (the run is looked at every second).
            let note = try #require(
                run.stderr.split(separator: "\n").first { $0.contains("waiting for a worker") }, "\(run)")
            #expect(
                note.hasPrefix("orchestra run: note: waiting for a worker: none has claimed a request for "), "\(run)")
            #expect(
                note.contains(
                    " s; 1 request of run 'late' waits: start 'orchestra worker --state postgres://… --schema \(schema)'"
                ),
                "\(run)")
            #expect(!run.stderr.contains(Self.url), "the URL, with its password, was printed")
            #expect((0..<20).allSatisfy { server.arrivals(of: "/payload/\($0)") == 1 }, "\(run)")
        }
    }

    // With the default --lease, a killed worker's request is sent by another well within the
    // default step timeout (30 s), which counts from the new worker's claim anyway.
    @Test(
        "a worker SIGKILLed while it sends a request: another worker with the default lease sends it again, and it succeeds",
        .enabled(if: ExitTests.areEnabled))
    func killedWorkerDefaultLease() async throws {
        try await Self.withServerAndSchema { server, schema in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: slow, url: "\(server.baseURL.absoluteString)/payload/7?latency_ms=2000", expect: [200] }
                """)
            let first = try Self.worker(schema, lease: nil)
            let coordinator = try OrchestraExecutable.start(Self.coordinator(file, schema: schema, runID: "failover"))
            try await withHangGuard(.seconds(60)) { try await server.arrival(of: "/payload/7") }
            first.child.send(SIGKILL)
            _ = await first.finish(limit: .seconds(30))
            let second = try Self.worker(schema, lease: nil)
            let run = await coordinator.finish(limit: .seconds(120))
            await Self.stop([second])
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("✓ slow"), "\(run)")
            #expect(server.arrivals(of: "/payload/7") == 2, "sent once by the killed worker, once by the other")
        }
    }

    @Test(
        "a request no worker took before Ctrl-C is cancelled with the run, not sent by a worker that comes later",
        .enabled(if: ExitTests.areEnabled))
    func givenUpBeforeAWorker() async throws {
        try await Self.withServerAndSchema { server, schema in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: only, url: "\(server.baseURL.absoluteString)/users/1", timeout: 1s }
                """)
            // No worker: the request waits (its timeout is for the attempt on a worker) until
            // Ctrl-C.
            let coordinator = try Self.coordinatorAlone(file, schema: schema, runID: "alone", noteAfter: 1)
            let noted = await coordinator.child.standardError.wait(
                for: "waiting for a worker: none has claimed a request", limit: .seconds(60))
            #expect(noted, "no note about the missing worker: \(coordinator.child.standardError.text)")
            coordinator.child.send(SIGINT)
            let run = await coordinator.finish(limit: .seconds(60))
            #expect(run.status == 130, "\(run)")
            #expect(run.stdout.contains("state: run 'alone' cancelled"), "\(run)")
            let status = try await OrchestraExecutable.run([
                "status", "--state", Self.url, "--schema", schema, "--run", "alone", "--output", "json",
            ])
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status)")
            let runs = try #require(document["runs"] as? [[String: Any]])
            #expect(runs.first?["state"] as? String == "cancelled", "\(status)")
            let jobs = try #require(runs.first?["jobs"] as? [String: Int])
            #expect(jobs["ready"] == 0 && jobs["cancelled"] == 1, "\(status)")
            #expect(server.arrivals(of: "/users/1") == 0)
        }
    }

    @Test("a wrong password, options of a state file, a worker without a PostgreSQL URL: named errors, nothing sent")
    func errors() async throws {
        try await withDemoServer { server in
            let file = try Self.workflow(base: server.baseURL, count: 3, hostLimit: 1, latency: 0)
            var wrong = try #require(URLComponents(string: Self.url))
            wrong.password = "not-the-password"
            let refused = try await OrchestraExecutable.run(["run", file, "--state", try #require(wrong.string)])
            #expect(refused.status == 2, "\(refused)")
            #expect(refused.stderr.contains("password authentication failed"), "\(refused)")
            #expect(!refused.stderr.contains("not-the-password"), "the password was printed")
            #expect(server.requestCount == 0, "a request was sent")

            let forced = try await OrchestraExecutable.run(["run", file, "--state", Self.url, "--force"])
            #expect(forced.status == 2 && forced.stderr.contains("--force goes on with a run"), "\(forced)")
            let schemaWithFile = try await OrchestraExecutable.run(["run", file, "--state", "x.state", "--schema", "s"])
            #expect(
                schemaWithFile.status == 2
                    && schemaWithFile.stderr.contains("--schema and --run-id apply to --state postgres://"),
                "\(schemaWithFile)")
            let worker = try await OrchestraExecutable.run(["worker", "--state", "runs.sqlite"])
            #expect(worker.status == 2 && worker.stderr.contains("--state must be a PostgreSQL URL"), "\(worker)")
            // --lease: 2 to 3600 seconds (renewed every third of it).
            for lease in ["1", "3601", "9223372036854775807"] {
                let leased = try await OrchestraExecutable.run(["worker", "--state", Self.url, "--lease", lease])
                #expect(leased.status == 2, "\(leased)")
                #expect(leased.stderr.contains("--lease must be 2 to 3600 seconds, got \(lease)"), "\(leased)")
            }
            let badWorker = try await OrchestraExecutable.run(["worker", "--state", try #require(wrong.string)])
            #expect(
                badWorker.status == 2 && badWorker.stderr.contains("password authentication failed"), "\(badWorker)")
        }
    }
}
