import Benchmark
import Foundation
import Orchestra
import OrchestraDurable

/// Durable runs on SQLite (BENCHMARKS.md#durable-runs-on-sqlite), no-op jobs, one worker, limit
/// 8, on the deep random DAG of BENCHMARKS.md#task-graphs (node i depends on up to 5 random earlier nodes), 10k and 100k jobs. Each
/// iteration uses a new store file in the temporary folder.
///
/// - `TaskGraph run in memory (baseline)`: the same graph run by `TaskGraph.run(limit: 8)`.
/// - `SQLite drain`: `DurableQueue.drain(limit: 8)` of a run submitted before the measurement:
///   every job claimed, run and recorded in its own transaction (claims batched). Jobs per
///   second are the operations per second of this row.
/// - `SQLite submit`: storing the run (one transaction, every job and dependency), checked by
///   TaskGraph's validation first.
enum DurableWorkload {
    static let noOp = JobKind<Int, Int>("no-op")

    static func graph(_ graph: GraphWorkload.Graph) throws -> DurableGraph {
        var durable = DurableGraph()
        for node in 0..<graph.count {
            try durable.add(graph.ids[node], noOp, input: node, after: graph.dependencies[node].map { graph.ids[$0] })
        }
        return durable
    }

    /// Runs `body` with a queue (the no-op handler registered) over a new store file in the
    /// temporary folder, removed afterwards.
    static func withQueue(_ body: (DurableQueue) async throws -> Void) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-bench-\(UUID()).sqlite")
            .path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let queue = DurableQueue(store: try SQLiteJobStore(path: path))
        queue.register(noOp) { input, _ in input }
        try await body(queue)
    }
}

func registerDurableBenchmarks() {
    let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .mallocCountTotal]
    let sizes: [(label: String, graph: @Sendable () -> GraphWorkload.Graph, iterations: Int)] = [
        ("10k", { GraphWorkload.deepSmall }, 5),
        ("100k", { GraphWorkload.deepLarge }, 2),
    ]
    for (label, graph, iterations) in sizes {
        let configuration = Benchmark.Configuration(
            metrics: metrics, warmupIterations: 0, maxDuration: .seconds(60), maxIterations: iterations)
        let setup: @Sendable () async throws -> Void = { _ = graph() }

        GraphWorkload.registerRun(
            "Durable \(label)/TaskGraph run in memory (baseline)", configuration: configuration, graph: graph)

        Benchmark(
            "Durable \(label)/SQLite drain", configuration: configuration,
            closure: { benchmark in
                try await DurableWorkload.withQueue { queue in
                    try await queue.submit(try DurableWorkload.graph(graph()), runID: "bench", limit: 8)
                    benchmark.startMeasurement()
                    try await queue.drain(limit: 8)
                    benchmark.stopMeasurement()
                    let state = try await queue.run("bench").state
                    precondition(state == .succeeded, "a durable job did not succeed")
                }
            }, setup: setup)

        Benchmark(
            "Durable \(label)/SQLite submit", configuration: configuration,
            closure: { benchmark in
                try await DurableWorkload.withQueue { queue in
                    let durable = try DurableWorkload.graph(graph())
                    benchmark.startMeasurement()
                    try await queue.submit(durable, runID: "bench", limit: 8)
                    benchmark.stopMeasurement()
                }
            }, setup: setup)
    }
}
