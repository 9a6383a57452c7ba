import Foundation
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

/// Durable runs in PostgreSQL against real faults: four `DurableCrashWorker` processes share
/// one run of 5,000 jobs with random dependencies, a resource limit and injected failures;
/// workers kill themselves (SIGKILL) after random numbers of attempts and are started again,
/// at least ten times in all, and PostgreSQL itself is restarted once mid-run.
///
/// `ORCHESTRA_FAULT_JOBS=20000` makes it a soak run (about five minutes on two cores). In
/// `swift test` the 20,000 jobs kept both cores busy for the whole run and slowed every other
/// test by as much; 5,000 still give each killed worker 150 to 300 attempts, and leave about
/// half of the jobs to run after the tenth kill.
@Suite(
    "Durable runs in PostgreSQL under faults",
    PostgresCluster.ownClusters,
    .timeLimit(.minutes(10)), .takesTurns)
struct PostgresFaultTests {
    static let jobCount = ProcessInfo.processInfo.environment["ORCHESTRA_FAULT_JOBS"].flatMap { Int($0) } ?? 5_000
    static let workers = 4
    static let hostLimit = 4

    /// One attempt, as a worker logged it.
    struct Attempt {
        var job: String
        var attempt: Int
        var pid: Int32
        var start: Int64
        var end: Int64?
    }

    /// The attempts in the log, by job and attempt number.
    static func attempts(in log: URL) -> [String: [Int: Attempt]] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        var attempts: [String: [Int: Attempt]] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 5, let number = Int(fields[1]), let pid = Int32(fields[3]),
                let time = Int64(fields[4])
            else { continue }
            let job = String(fields[0])
            if fields[2] == "start" {
                attempts[job, default: [:]][number] = Attempt(
                    job: job, attempt: number, pid: pid, start: time, end: nil)
            } else {
                attempts[job, default: [:]][number]?.end = time
            }
        }
        return attempts
    }

    @Test(.enabled(if: ExitTests.areEnabled))
    func everyOutcomeIsRecordedOnceAndTheLimitHeldThroughKillsAndARestartOfTheServer() async throws {
        // A cluster of the test's own: a restart of the shared one refuses the connections of
        // every other test's processes starting at that moment.
        try await PostgresCluster.withOwnCluster { cluster in try await Self.killsAndARestart(cluster) }
    }

    static func killsAndARestart(_ cluster: PostgresCluster) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-pg-fault-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("attempts.log")
        let schema = "fault_\(UInt32.random(in: 0...UInt32.max))"
        let seed = UInt64.random(in: 1...1_000_000)
        var environment = ProcessInfo.processInfo.environment
        environment["DURABLE_SCHEMA"] = schema
        environment["DURABLE_HOST_LIMIT"] = "\(Self.hostLimit)"
        let arguments = [cluster.url, log.path, "\(Self.jobCount)", "\(seed)"]

        func start(killing: Bool) throws -> ChildProcess {
            // A kill after an eighth to a quarter of a worker's share of the attempts.
            let share = Self.jobCount / Self.workers
            let extra = killing ? ["\(Int.random(in: (share / 8)...(share / 4)))"] : []
            return try ChildProcess(
                executable: DurableCrashTests.worker, arguments: arguments + extra, environment: environment)
        }

        var kills: [(pid: Int32, at: Int64)] = []
        var restarted = false
        var running: [Int32: ChildProcess] = [:]
        for _ in 0..<Self.workers {
            let child = try start(killing: true)
            running[child.pid] = child
        }
        var failures: [String] = []
        while !running.isEmpty {
            // The first worker to end.
            let children = Array(running.values)
            let (pid, status) = await withTaskGroup(of: (Int32, Int32?).self) { group in
                for child in children {
                    group.addTask { (child.pid, await child.exitStatus(within: .seconds(400))) }
                }
                let first = await group.next()!
                group.cancelAll()
                return first
            }
            let child = running.removeValue(forKey: pid)!
            if status == -SIGKILL {
                kills.append((pid, Int64(Date().timeIntervalSince1970 * 1e9)))
                if kills.count == 5, !restarted {
                    // PostgreSQL restarted (immediate mode: like a crash) while the other workers run.
                    let (restartStatus, restartErrors) = try await cluster.restart()
                    #expect(restartStatus == 0, "seed \(seed): the server's restart: \(restartErrors)")
                    restarted = true
                }
                let next = try start(killing: kills.count < 10 + Self.workers)
                running[next.pid] = next
            } else if status != 0 {
                let errors = await child.standardError.all()
                failures.append(
                    "seed \(seed): worker \(pid) ended with \(status.map(String.init) ?? "no exit") — \(errors)")
                for other in running.values { other.send(SIGKILL) }
                break
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(kills.count >= 10, "seed \(seed): \(kills.count) kills")
        #expect(restarted)

        try await PostgresJobStore.withStore(url: cluster.url, schema: schema) { store in
            let queue = DurableQueue(store: store)
            #expect(try await queue.run("crash-\(seed)").state == .succeeded, "seed \(seed)")
            let jobs = try await queue.jobs(of: "crash-\(seed)")
            #expect(jobs.count == Self.jobCount)
            // Every output is what the graph computes.
            var expected: [String: Int] = [:]
            for job in jobs {
                let work = try JSONDecoder().decode(DurableCrashTests.Work.self, from: job.input)
                var output = work.index
                for dependency in work.dependencies { output = (output + expected[dependency]!) % 1_000_003 }
                expected[job.id] = output
                #expect(job.state == .succeeded)
                #expect(try job.output(as: Int.self) == output, "seed \(seed): job \(job.id)")
            }

            let killed = Dictionary(kills.map { ($0.pid, $0.at) }, uniquingKeysWith: { first, _ in first })
            let attempts = Self.attempts(in: log)
            var intervals: [(start: Int64, end: Int64)] = []
            for job in jobs {
                let index = Int(job.id.dropFirst())!
                let logged = attempts[job.id] ?? [:]
                #expect(!logged.isEmpty, "seed \(seed): job \(job.id) never started")
                // Every run but the last was cut short by a kill (its worker killed while the job
                // was claimed: in its handler, or before its outcome was recorded), or is the
                // injected first failure: at most 1 + (kills while it was claimed) + 1 runs.
                let runs = logged.values.sorted { $0.attempt < $1.attempt }
                #expect(
                    runs.allSatisfy { $0.end != nil || killed[$0.pid] != nil },
                    "seed \(seed): job \(job.id) has an attempt that never ended in a worker that was not killed")
                let repeated = runs.dropLast().filter { run in
                    killed[run.pid] == nil && !(index % 13 == 0 && run.attempt == 1 && run.end != nil)
                }
                #expect(
                    repeated.isEmpty,
                    "seed \(seed): job \(job.id) ran again after \(repeated.map { "attempt \($0.attempt) by \($0.pid), not killed" })"
                )
                let killsWhileClaimed = runs.dropLast().count { killed[$0.pid] != nil }
                #expect(runs.count <= 1 + killsWhileClaimed + (index % 13 == 0 ? 1 : 0))
                #expect(job.attempts >= logged.count, "seed \(seed): job \(job.id): more starts than attempts")
                if index % 4 == 0 {
                    for attempt in logged.values {
                        intervals.append((attempt.start, attempt.end ?? killed[attempt.pid] ?? attempt.start))
                    }
                }
            }
            // The resource's limit held across the workers: never more jobs using it at once.
            var events = intervals.flatMap { [($0.start, 1), ($0.end, -1)] }
            events.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            var inUse = 0
            var peak = 0
            for (_, change) in events {
                inUse += change
                peak = max(peak, inUse)
            }
            #expect(peak <= Self.hostLimit, "seed \(seed): \(peak) jobs used the host at once")
            #expect(peak >= 2, "the workers did share the host")
            try await store.client.query("DROP SCHEMA \(unescaped: schema) CASCADE")
        }
    }
}
