// A job store's claims and records alone, without a DurableQueue's worker loop or handlers:
// one run submitted, then one loop that claims up to LIMIT jobs and records them all
// succeeded with the next claim (`record(_:thenClaim:now:)`, as a worker does), until the run
// ends. Prints the jobs per second of that loop. For before/after figures of a change to the
// claim (ClaimPlanner), where the worker loop's own cost would blur them.
//
//   ClaimThroughput sqlite SHAPE JOBS LIMIT              a new SQLite file, removed after
//   ClaimThroughput postgres URL SCHEMA SHAPE JOBS LIMIT a new schema (the caller drops it)
//
// SHAPE: `independent` (no dependency), `pairs` (a-i -> b-i), `resource` (independent; every
// second job on the resource "h", limited to 3: a claim steps over the waiting ones).
// Output: `claims jobs=N seconds=S jobs_per_second=R claims=C`
import Foundation
import OrchestraDurable
import OrchestraPostgres

let noOp = JobKind<Int, Int>("no-op")

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ClaimThroughput: \(message)\n".utf8))
    exit(2)
}

func graph(shape: String, jobs: Int) throws -> (DurableGraph, [String: Int]) {
    var graph = DurableGraph()
    switch shape {
    case "independent":
        for index in 0..<jobs { try graph.add("j\(index)", noOp, input: index) }
        return (graph, [:])
    case "pairs":
        for index in 0..<jobs / 2 {
            try graph.add("a\(index)", noOp, input: index)
            try graph.add("b\(index)", noOp, input: index, after: ["a\(index)"])
        }
        return (graph, [:])
    case "resource":
        for index in 0..<jobs {
            try graph.add(
                "j\(index)", noOp, input: index, options: .init(resources: index.isMultiple(of: 2) ? ["h"] : []))
        }
        return (graph, ["h": 3])
    default:
        fail("unknown shape \(shape)")
    }
}

func measure(_ store: any JobStore, shape: String, jobs: Int, limit: Int) async throws {
    let (graph, resourceLimits) = try graph(shape: shape, jobs: jobs)
    let queue = DurableQueue(store: store, worker: "claims")
    try await queue.submit(graph, runID: "bench", limit: 100_000, resourceLimits: resourceLimits)
    let clock = ContinuousClock()
    let start = clock.now
    var running: [ClaimedJob] = []
    var done = 0
    var claims = 0
    repeat {
        let now = Date()
        let claim = Claim(
            worker: "claims", kinds: [noOp.name], limit: limit, now: now, leaseExpiry: now.addingTimeInterval(300))
        let outcomes = running.map { AttemptOutcome(job: $0, outcome: .succeeded(Data("0".utf8))) }
        done += outcomes.count
        running = try await store.record(outcomes, thenClaim: claim, now: now).claimed
        claims += 1
    } while !running.isEmpty
    let seconds = (clock.now - start) / .seconds(1)
    guard done == jobs, try await store.run("bench")?.state == .succeeded else {
        fail("the run did not end: \(done) of \(jobs) jobs recorded")
    }
    print("claims jobs=\(done) seconds=\(seconds) jobs_per_second=\(Double(done) / seconds) claims=\(claims)")
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "sqlite":
        guard arguments.count == 4, let jobs = Int(arguments[2]), let limit = Int(arguments[3]) else {
            fail("usage: sqlite SHAPE JOBS LIMIT")
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("claims-\(UUID()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await measure(try SQLiteJobStore(path: path), shape: arguments[1], jobs: jobs, limit: limit)
    case "postgres":
        guard arguments.count == 6, let jobs = Int(arguments[4]), let limit = Int(arguments[5]) else {
            fail("usage: postgres URL SCHEMA SHAPE JOBS LIMIT")
        }
        try await PostgresJobStore.withStore(url: arguments[1], schema: arguments[2]) { store in
            try await measure(store, shape: arguments[3], jobs: jobs, limit: limit)
        }
    default:
        fail("usage: ClaimThroughput sqlite|postgres …")
    }
} catch {
    fail("\(error)")
}
