// The durable job store on PostgreSQL, measured from outside the test suite (issue 19):
// no-op jobs per second with several worker processes, claim sizes, and the latency from a
// dependency's end to its dependent's start; the same workloads on SQLite as the baseline.
// Driven by Benchmarks/postgres-benchmarks.sh, which starts the server, the processes and
// prints the tables (BENCHMARKS.md#durable-runs-on-postgresql).
//
//   PostgresThroughput submit URL SCHEMA SHAPE JOBS      store one run "bench" in SCHEMA
//   PostgresThroughput work URL SCHEMA LIMIT [times]     one worker process: prints "ready",
//                                                        waits for a line on stdin, drains
//   PostgresThroughput sqlite SHAPE JOBS LIMIT [times]   the baseline: a new SQLite file,
//                                                        submit, then drain it in this process
//
// SHAPE: `independent` (JOBS jobs, no dependency), `chain` (JOBS jobs, each after the one
// before), `pairs` (JOBS/2 pairs a-i -> b-i), `chainsK` (K chains of JOBS/K jobs side by side). Every job is of the kind "no-op" and returns at
// once; the run's own limit is 100,000, so only the workers' limits count.
//
// Output, one fact a line, `key=value` words (read by the script):
//   submitted jobs=N seconds=S
//   worker pid=P limit=L jobs=N go_ns=T run_end_ns=T|none drain_end_ns=T
//   job id=ID pid=P start_mono=T end_mono=T start_real=T end_real=T   (with `times`)
// `_real` times are CLOCK_REALTIME nanoseconds (comparable between processes), `_mono` are
// CLOCK_MONOTONIC; `run_end_ns` is when this worker saw the run end (its last outcome
// recorded), if it was the one that recorded it.
import Foundation
import OrchestraDurable
import OrchestraPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let noOp = JobKind<Int, Int>("no-op")
let runID = "bench"

func nanoseconds(_ clock: clockid_t) -> Int64 {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("PostgresThroughput: \(message)\n".utf8))
    exit(2)
}

func graph(shape: String, jobs: Int) throws -> DurableGraph {
    var graph = DurableGraph()
    switch shape {
    case "independent":
        for index in 0..<jobs { try graph.add("j\(index)", noOp, input: index) }
    case "chain":
        for index in 0..<jobs {
            try graph.add("j\(index)", noOp, input: index, after: index == 0 ? [] : ["j\(index - 1)"])
        }
    case "pairs":
        for index in 0..<jobs / 2 {
            try graph.add("a\(index)", noOp, input: index)
            try graph.add("b\(index)", noOp, input: index, after: ["a\(index)"])
        }
    case let shape where shape.hasPrefix("chains"):
        guard let count = Int(shape.dropFirst(6)), count >= 1 else { fail("chainsK: K chains, K at least 1") }
        for index in 0..<jobs / count {
            for chain in 0..<count {
                try graph.add(
                    "c\(chain)_\(index)", noOp, input: index, after: index == 0 ? [] : ["c\(chain)_\(index - 1)"])
            }
        }
    default:
        fail("unknown shape '\(shape)': independent, chain, pairs or chainsK")
    }
    return graph
}

/// What the handlers saw: how many ran, and (with `times`) when each started and ended.
final class Recorder: @unchecked Sendable {
    // A plain lock: the library's `Locked` is internal to its package.
    private let lock = NSLock()
    private var count = 0
    private var times: [(String, Int64, Int64, Int64, Int64)] = []
    let keepsTimes: Bool

    init(keepsTimes: Bool) { self.keepsTimes = keepsTimes }

    func handler(_ input: Int, _ context: JobContext) async throws -> Int {
        guard keepsTimes else {
            lock.withLock { count += 1 }
            return input
        }
        let (startMono, startReal) = (nanoseconds(CLOCK_MONOTONIC), nanoseconds(CLOCK_REALTIME))
        // The end is read just before the handler returns: what follows is the queue's work.
        let (endMono, endReal) = (nanoseconds(CLOCK_MONOTONIC), nanoseconds(CLOCK_REALTIME))
        lock.withLock {
            count += 1
            times.append((context.jobID, startMono, endMono, startReal, endReal))
        }
        return input
    }

    func report(pid: Int32) -> (Int, [String]) {
        lock.withLock {
            (
                count,
                times.map {
                    "job id=\($0.0) pid=\(pid) start_mono=\($0.1) end_mono=\($0.2) start_real=\($0.3) end_real=\($0.4)"
                }
            )
        }
    }
}

/// Drains `queue` with `limit` slots; returns the realtime ns at which this queue saw the run
/// end (nil if another worker recorded its last outcome) and when `drain` returned.
func drainTimed(_ queue: DurableQueue, limit: Int) async throws -> (runEnd: Int64?, drainEnd: Int64) {
    let events = queue.events()
    let watcher = Task {
        // Only `runEnded` matters; the other events are dropped as they come.
        for await event in events {
            if case .runEnded = event { return Optional(nanoseconds(CLOCK_REALTIME)) }
        }
        return nil
    }
    try await queue.drain(limit: limit)
    let drainEnd = nanoseconds(CLOCK_REALTIME)
    // The event is emitted before `drain` returns, if at all: give the watcher a moment to
    // read it, then stop it.
    try? await Task.sleep(for: .milliseconds(20))
    watcher.cancel()
    return (await watcher.value, drainEnd)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let pid = getpid()

/// Drains `queue` from now, then prints what `recorder` kept and the worker's line.
func drainAndReport(_ queue: DurableQueue, limit: Int, recorder: Recorder) async throws {
    let go = nanoseconds(CLOCK_REALTIME)
    let (runEnd, drainEnd) = try await drainTimed(queue, limit: limit)
    let (count, lines) = recorder.report(pid: pid)
    for line in lines { print(line) }
    print(
        "worker pid=\(pid) limit=\(limit) jobs=\(count) go_ns=\(go) run_end_ns=\(runEnd.map(String.init) ?? "none") drain_end_ns=\(drainEnd)"
    )
}
do {
    switch arguments.first {
    case "submit":
        guard arguments.count == 5, let jobs = Int(arguments[4]) else { fail("usage: submit URL SCHEMA SHAPE JOBS") }
        let graph = try graph(shape: arguments[3], jobs: jobs)
        try await PostgresJobStore.withStore(url: arguments[1], schema: arguments[2]) { store in
            let queue = DurableQueue(store: store, worker: "submit-\(pid)")
            let start = nanoseconds(CLOCK_MONOTONIC)
            try await queue.submit(graph, runID: runID, limit: 100_000)
            let seconds = Double(nanoseconds(CLOCK_MONOTONIC) - start) / 1e9
            print("submitted jobs=\(graph.jobIDs.count) seconds=\(seconds)")
        }
    case "work":
        guard (4...5).contains(arguments.count), let limit = Int(arguments[3]), limit >= 1 else {
            fail("usage: work URL SCHEMA LIMIT [times]")
        }
        let recorder = Recorder(keepsTimes: arguments.count == 5 && arguments[4] == "times")
        // An idle worker looks again every 50 ms at most: it leaves soon after the run ends.
        // ORCHESTRA_CONNECTIONS: the store's connection budget (PostgresJobStore.defaultConnections).
        let connections =
            ProcessInfo.processInfo.environment["ORCHESTRA_CONNECTIONS"].flatMap { Int($0) }
            ?? PostgresJobStore.defaultConnections
        try await PostgresJobStore.withStore(
            url: arguments[1], schema: arguments[2], pollInterval: .milliseconds(50), connections: connections
        ) { store in
            let queue = DurableQueue(store: store, worker: "worker-\(pid)", leaseDuration: .seconds(120))
            queue.register(noOp, handler: recorder.handler)
            // One round trip before the start, so the pool has a connection open.
            _ = try await store.outlook(after: Date(), kinds: [])
            print("ready")
            fflush(nil)  // every stream: `stdout` itself is not concurrency-safe to name
            _ = readLine()
            try await drainAndReport(queue, limit: limit, recorder: recorder)
        }
    case "sqlite":
        guard (4...5).contains(arguments.count), let jobs = Int(arguments[2]), let limit = Int(arguments[3]), limit >= 1
        else { fail("usage: sqlite SHAPE JOBS LIMIT [times]") }
        let graph = try graph(shape: arguments[1], jobs: jobs)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-pg-bench-\(UUID()).sqlite")
            .path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let recorder = Recorder(keepsTimes: arguments.count == 5 && arguments[4] == "times")
        let queue = DurableQueue(store: try SQLiteJobStore(path: path), worker: "worker-\(pid)")
        queue.register(noOp, handler: recorder.handler)
        let start = nanoseconds(CLOCK_MONOTONIC)
        try await queue.submit(graph, runID: runID, limit: 100_000)
        print("submitted jobs=\(graph.jobIDs.count) seconds=\(Double(nanoseconds(CLOCK_MONOTONIC) - start) / 1e9)")
        try await drainAndReport(queue, limit: limit, recorder: recorder)
    default:
        fail("usage: PostgresThroughput submit|work|sqlite …")
    }
} catch {
    fail("\(error)")
}
