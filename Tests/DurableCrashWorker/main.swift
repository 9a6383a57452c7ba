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
// else. Job i's output is i plus the sum of its dependencies' outputs, modulo 1,000,003. Every
// 13th job fails its first attempt (retried after 5 ms).
import Foundation
import Orchestra
import OrchestraDurable

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
        options: .init(retry: DurableRetry(maxAttempts: 3, initialDelay: .milliseconds(5))))
}

do throws(any Error) {
    let queue = DurableQueue(store: try SQLiteJobStore(path: arguments[1]), leaseDuration: .milliseconds(500))
    queue.register(work) { input, context in
        let line = "\(context.jobID) \(context.attempt)\n"
        _ = line.withCString { write(log, $0, strlen($0)) }
        if let killAfter,
            started.withLock({ count in
                count += 1
                return count == killAfter
            })
        {
            kill(getpid(), SIGKILL)
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
    try await queue.submit(graph, runID: "crash-\(seed)", limit: 8)
    try await queue.drain(limit: 8)
    print("done")
} catch {
    FileHandle.standardError.write(Data("DurableCrashWorker: \(error)\n".utf8))
    exit(1)
}
