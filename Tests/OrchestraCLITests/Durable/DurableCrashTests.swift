import Foundation
import OrchestraDurable
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Durable runs against real crashes: `DurableCrashWorker` (Tests/DurableCrashWorker) drains a
/// 10,000-job graph with random dependencies and injected failures; it is killed with SIGKILL
/// (it sends it to itself after a random number of attempts) five times and started again
/// each time with the same store.
@Suite("Durable runs killed mid-run", .timeLimit(.minutes(10)), .takesTurns)
struct DurableCrashTests {
    static let worker = OrchestraExecutable.url.deletingLastPathComponent().appendingPathComponent(
        "DurableCrashWorker")

    struct Work: Decodable {
        var index: Int
        var dependencies: [String]
    }

    /// The attempt numbers the worker logged, per job.
    static func starts(in log: URL) -> [String: [Int]] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        var starts: [String: [Int]] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, let attempt = Int(fields[1]) {
                starts[String(fields[0]), default: []].append(attempt)
            }
        }
        return starts
    }

    @Test(.enabled(if: ExitTests.areEnabled))
    func everyJobEndsWithItsOutputRecordedOnceAfterFiveKills() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-crash-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.appendingPathComponent("runs.sqlite")
        let log = folder.appendingPathComponent("attempts.log")
        let jobCount = 10_000
        let arguments = [store.path, log.path, "\(jobCount)", "7"]
        let environment = ProcessInfo.processInfo.environment

        var kills = 0
        for round in 0..<5 {
            // The worker kills itself (SIGKILL) after a random number of attempts: an eighth to
            // three sixteenths of the work, so five rounds never reach its end.
            let killAfter = jobCount / 8 + Int.random(in: 0..<(jobCount / 16))
            let child = try ChildProcess(
                executable: Self.worker, arguments: arguments + ["\(killAfter)"], environment: environment)
            let status = await child.exitStatus(within: .seconds(300))
            let errors = await child.standardError.all()
            #expect(status == -SIGKILL, "round \(round): \(errors)")
            kills += 1
        }
        let last = try ChildProcess(executable: Self.worker, arguments: arguments, environment: environment)
        let status = await last.exitStatus(within: .seconds(300))
        let errors = await last.standardError.all()
        #expect(status == 0, "the last run: \(errors)")

        let queue = DurableQueue(store: try SQLiteJobStore(path: store.path))
        #expect(try await queue.run("crash-7").state == .succeeded)
        let jobs = try await queue.jobs(of: "crash-7")
        #expect(jobs.count == jobCount)

        // Every output is what the graph computes: recorded once, never from a stale attempt.
        var expected: [String: Int] = [:]
        for job in jobs {
            let work = try JSONDecoder().decode(Work.self, from: job.input)
            var output = work.index
            for dependency in work.dependencies { output = (output + expected[dependency]!) % 1_000_003 }
            expected[job.id] = output
            #expect(job.state == .succeeded)
            #expect(try job.output(as: Int.self) == output, "job \(job.id)")
        }

        // At least once, and more only for an injected failure (every 13th job's first attempt,
        // if its handler ran: a kill between a claim and the handler skips it) or a kill while
        // it ran: every kill interrupts at most the 8 jobs running at once.
        let starts = Self.starts(in: log)
        var repeats = 0
        for (index, job) in jobs.enumerated() {
            let attempts = starts[job.id] ?? []
            let injected = index % 13 == 0 && attempts.contains(1) ? 1 : 0
            #expect(!attempts.isEmpty, "job \(job.id) never started")
            #expect(attempts.count <= job.attempts, "job \(job.id): \(attempts) started, \(job.attempts) attempts")
            #expect(Set(attempts).count == attempts.count, "job \(job.id): an attempt number twice: \(attempts)")
            repeats += job.attempts - 1 - injected
        }
        #expect(repeats >= 0 && repeats <= kills * 8, "\(repeats) attempts beyond the first after \(kills) kills")
    }
}
