// A worker process for the crash tests of durable runs (Tests/OrchestraCLITests/Durable): it
// submits a graph of jobs with random dependencies to the store (idempotent, so every start
// submits it again) and drains it. The test kills it with SIGKILL at random moments and starts
// it again; in the end the store must hold every job's output exactly once.
//
//   DurableCrashWorker STORE LOG JOBS SEED [KILL-AFTER]
//
// With KILL-AFTER, the process sends itself SIGKILL once it has started that many attempts
// (the test picks the number at random): a kill in the middle of a handler, with other attempts
// in flight, whatever the machine's load (a test that killed from outside at a moment it
// measured could miss the whole run on a busy machine).
// Each attempt appends "JOB ATTEMPT\n" to LOG (one `write`, O_APPEND) before it does anything
// else.
//
// With a STORE of postgres://… the run lives in PostgreSQL, in the schema DURABLE_SCHEMA, and
// several workers share it (the fault tests of OrchestraPostgres): the run's limit is 16, every
// fourth job uses the resource "host" (limit DURABLE_HOST_LIMIT, 4 by default), leases
// last 20 s (longer than the server's restart, so that only kills make jobs run again), and each attempt logs "JOB ATTEMPT start PID NANOSECONDS" as it starts and
// "JOB ATTEMPT end PID NANOSECONDS" as it ends (wall-clock times, for the resource check).
//
// Job i's output is i plus the sum of its dependencies' outputs, modulo 1,000,003. Every
// 13th job fails its first attempt (retried after 5 ms).
import Foundation
import Orchestra
import OrchestraDurable
import OrchestraPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Work: Codable, Sendable {
    var index: Int
    var dependencies: [String]
}

let arguments = CommandLine.arguments
guard (5...6).contains(arguments.count), let jobCount = Int(arguments[3]), let seed = UInt64(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: DurableCrashWorker STORE LOG JOBS SEED [KILL-AFTER]\n".utf8))
    exit(2)
}
let killAfter = arguments.count == 6 ? Int(arguments[5]) : nil
let started = Locked(0)
let log = open(arguments[2], O_WRONLY | O_CREAT | O_APPEND, 0o644)
guard log >= 0 else {
    FileHandle.standardError.write(Data("cannot open \(arguments[2])\n".utf8))
    exit(2)
}

/// SplitMix64: the same graph for the same seed, in every process.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let work = JobKind<Work, Int>("work")
let environment = ProcessInfo.processInfo.environment
let shared = arguments[1].hasPrefix("postgres://")
var random = SplitMix64(state: seed)
var graph = DurableGraph()
for index in 0..<jobCount {
    var dependencies: [String] = []
    if index > 0 {
        for _ in 0..<Int(random.next() % 4) { dependencies.append("j\(Int(random.next() % UInt64(index)))") }
    }
    dependencies = Array(Set(dependencies)).sorted()
    try graph.add(
        "j\(index)", work, input: Work(index: index, dependencies: dependencies), after: dependencies,
        options: .init(
            resources: shared && index % 4 == 0 ? ["host"] : [],
            retry: DurableRetry(maxAttempts: 3, initialDelay: .milliseconds(5))))
}

/// Nanoseconds since 1970, for the log.
@Sendable func wallNanoseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }

@Sendable func append(_ line: String) {
    _ = line.withCString { write(log, $0, strlen($0)) }
}

/// Drains the run on `store`; every attempt logged, the kill and the injected failures as above.
func drainRun(on store: any JobStore, leaseDuration: Duration, limit: Int, resources: [String: Int]) async throws {
    let queue = DurableQueue(store: store, worker: "pid-\(getpid())", leaseDuration: leaseDuration)
    queue.register(work) { input, context in
        if shared {
            append("\(context.jobID) \(context.attempt) start \(getpid()) \(wallNanoseconds())\n")
        } else {
            append("\(context.jobID) \(context.attempt)\n")
        }
        if let killAfter,
            started.withLock({ count in
                count += 1
                return count == killAfter
            })
        {
            kill(getpid(), SIGKILL)
        }
        defer {
            if shared { append("\(context.jobID) \(context.attempt) end \(getpid()) \(wallNanoseconds())\n") }
        }
        if input.index % 13 == 0 && context.attempt == 1 {
            throw DurableJobFailure("injected failure of \(context.jobID)")
        }
        var output = input.index
        for dependency in input.dependencies {
            output = (output + (try context.output(of: JobHandle<Int>(id: dependency)))) % 1_000_003
        }
        return output
    }
    try await queue.submit(graph, runID: "crash-\(seed)", limit: limit, resourceLimits: resources)
    try await queue.drain(limit: 8)
}

do throws(any Error) {
    if shared {
        let hostLimit = environment["DURABLE_HOST_LIMIT"].flatMap { Int($0) } ?? 4
        try await PostgresJobStore.withStore(url: arguments[1], schema: environment["DURABLE_SCHEMA"] ?? "orchestra") {
            store in
            try await drainRun(on: store, leaseDuration: .seconds(20), limit: 16, resources: ["host": hostLimit])
        }
    } else {
        try await drainRun(
            on: try SQLiteJobStore(path: arguments[1]), leaseDuration: .milliseconds(500), limit: 8, resources: [:])
    }
    print("done")
} catch {
    FileHandle.standardError.write(Data("DurableCrashWorker: \(error)\n".utf8))
    exit(1)
}
