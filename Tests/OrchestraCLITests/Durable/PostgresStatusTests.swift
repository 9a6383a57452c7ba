import Foundation
import OrchestraDurable
import OrchestraPostgres
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra status --state postgres://…`: the runs of a PostgreSQL store, read only.
@Suite(
    "orchestra status on a PostgreSQL store",
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresStatusTests {
    static let url = ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] ?? ""
    static let step = JobKind<Int, Int>("step")

    /// A schema with three runs: `done` (3 jobs succeeded), `broken` (one failed, its dependent
    /// skipped), `pending` (4 jobs submitted, none run). Dropped after `body`.
    static func withRuns(_ body: (String) async throws -> Void) async throws {
        let schema = "status_\(UInt32.random(in: 0...UInt32.max))"
        try await PostgresJobStore.withStore(url: url, schema: schema, pollInterval: nil) { store in
            do {
                let queue = DurableQueue(store: store)
                queue.register(step) { input, _ in
                    if input < 0 { throw DurableJobFailure("negative input \(input)", retryable: false) }
                    return input
                }
                var done = DurableGraph()
                for index in 1...3 { try done.add("job-\(index)", step, input: index) }
                try await queue.submit(done, runID: "done")
                var broken = DurableGraph()
                let failing = try broken.add("fails", step, input: -1)
                try broken.add("after", step, input: 1, after: [failing.id])
                try await queue.submit(broken, runID: "broken")
                try await queue.drain()
                var pending = DurableGraph()
                for index in 1...4 { try pending.add("job-\(index)", step, input: index) }
                try await queue.submit(pending, runID: "pending")
                try await body(schema)
            } catch {
                _ = try? await store.client.query("DROP SCHEMA IF EXISTS \(unescaped: schema) CASCADE")
                throw error
            }
            _ = try await store.client.query("DROP SCHEMA IF EXISTS \(unescaped: schema) CASCADE")
        }
    }

    @Test("the runs, newest first, with their jobs by state; exit 1 while one is not done, 0 for a run that succeeded")
    func runsByState() async throws {
        try await Self.withRuns { schema in
            let all = try await OrchestraExecutable.run([
                "status", "--state", Self.url, "--schema", schema, "--no-color",
            ])
            #expect(all.status == 1, "\(all)")
            let rows = all.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            let byRun = Dictionary(rows.filter { $0.count == 12 }.map { ($0[1], Array($0[0...10])) }) { first, _ in
                first
            }
            // mark, run, state, succeeded, failed, uncertain, skipped, running, waiting, workers,
            // steps done (none: not a workflow's run)
            #expect(byRun["done"] == ["✓", "done", "succeeded", "3", "0", "0", "0", "0", "0", "0", "–"], "\(all)")
            #expect(byRun["broken"] == ["✗", "broken", "failed", "0", "1", "0", "1", "0", "0", "0", "–"], "\(all)")
            #expect(byRun["pending"] == ["…", "pending", "running", "0", "0", "0", "0", "0", "4", "0", "–"], "\(all)")
            #expect(all.stdout.contains("3 runs shown, 1 still running"), "\(all)")

            let json = try await OrchestraExecutable.run([
                "status", "--state", Self.url, "--schema", schema, "--output", "json",
            ])
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
            let runs = try #require(document["runs"] as? [[String: Any]])
            #expect(runs.compactMap { $0["id"] as? String } == ["pending", "broken", "done"], "newest first")
            let jobs = try #require(runs.first?["jobs"] as? [String: Int])
            #expect(jobs["ready"] == 4 && jobs["succeeded"] == 0)
            #expect(document["schema"] as? String == schema)

            let one = try await OrchestraExecutable.run([
                "status", "--state", Self.url, "--schema", schema, "--run", "done", "--no-color",
            ])
            #expect(one.status == 0, "\(one)")
            #expect(!one.stdout.contains("pending"), "\(one)")
            let unknown = try await OrchestraExecutable.run([
                "status", "--state", Self.url, "--schema", schema, "--run", "nope",
            ])
            #expect(unknown.status == 2, "\(unknown)")
            #expect(unknown.stderr.contains("there is no run 'nope' in schema '\(schema)'"), "\(unknown)")
        }
    }

    @Test("a schema with no store, a wrong password, options for a file: named errors, and nothing created")
    func errors() async throws {
        let schema = "status_missing_\(UInt32.random(in: 0...UInt32.max))"
        let missing = try await OrchestraExecutable.run(["status", "--state", Self.url, "--schema", schema])
        #expect(missing.status == 2, "\(missing)")
        #expect(missing.stderr.contains("there is no Orchestra store in schema '\(schema)'"), "\(missing)")
        try await PostgresJobStore.withStore(url: Self.url, schema: "orchestra_probe", pollInterval: nil) { store in
            var exists: [Bool] = []
            for try await found in try await store.client.query(
                "SELECT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = \(schema))"
            ).decode(Bool.self) {
                exists.append(found)
            }
            #expect(exists == [false], "status created the schema")
            _ = try await store.client.query("DROP SCHEMA IF EXISTS orchestra_probe CASCADE")
        }

        var wrong = try #require(URLComponents(string: Self.url))
        wrong.password = "not-the-password"
        let refused = try await OrchestraExecutable.run(["status", "--state", try #require(wrong.string)])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("password authentication failed"), "\(refused)")
        #expect(!refused.stderr.contains("not-the-password"), "the password was printed")

        let misused = try await OrchestraExecutable.run(["status", "--state", "run.state", "--schema", "x"])
        #expect(misused.status == 2, "\(misused)")
        #expect(misused.stderr.contains("--schema, --run and --last apply to a PostgreSQL URL"), "\(misused)")
    }
}
