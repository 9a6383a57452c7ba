import Benchmark
import Dispatch
import Foundation
@_spi(Simulation) import Orchestra
import OrchestraOperations

/// Benchmark 7: OrchestraOperations.
///
/// - `Operations 100k/…`: 100,000 no-op operations on one `OperationQueue` (default width),
///   `addOperations(_:waitUntilFinished: true)`: `BlockOperation` (baseline) against an
///   `AsyncOperation` subclass whose `execute()` calls `finish()` at once (every state change
///   and notification of an asynchronous operation, none of the work). Operations are made
///   before the measurement. Target: within 1.5x.
/// - `Operations chain 10k/…`, `Operations DAG 10k/…`, `Operations layered DAG 10k/…`: the
///   same operations run by `OperationQueue` with `addDependency` (baseline, 8 at once) and by
///   the TaskGraph bridge (`TaskGraph(operations:)` then `run(limit: 8)`, building the graph
///   inside the measurement). A 10,000-operation chain; a random DAG, each operation depending
///   on 5 random earlier ones (49,985 edges); and the layered DAG of the `Graph` benchmarks
///   (100-wide layers, 49,500 edges). Target: the bridge at least 100x faster. A third
///   benchmark per shape calls `start()` on each operation in dependency order on one thread:
///   the cost of Foundation's own start and finish bookkeeping, a floor no scheduler can beat.
enum OperationsWorkload {
    static let limit = 8

    final class ImmediateOperation: AsyncOperation, @unchecked Sendable {
        override func execute() { finish() }
    }

    static func chain(_ count: Int) -> [[Int]] {
        (0..<count).map { $0 == 0 ? [] : [$0 - 1] }
    }

    /// Each node depends on `edges` distinct random earlier nodes (fewer for the first ones).
    static func randomDAG(_ count: Int, edges: Int = 5, seed: UInt64 = 7) -> [[Int]] {
        var random = SplitMix64(seed: seed)
        func next() -> UInt64 { random.next() }
        return (0..<count).map { node in
            var picks = Set<Int>()
            while picks.count < min(edges, node) { picks.insert(Int(next() % UInt64(node))) }
            return picks.sorted()
        }
    }

    /// Named no-op `BlockOperation`s linked by `addDependency`.
    static func operations(_ dependencies: [[Int]]) -> [Operation] {
        let operations: [Operation] = (0..<dependencies.count).map { index in
            let operation = BlockOperation { blackHole(index) }
            operation.name = "op\(index)"
            return operation
        }
        for (index, targets) in dependencies.enumerated() {
            for target in targets { operations[index].addDependency(operations[target]) }
        }
        return operations
    }
}

func registerOperationsBenchmarks() {
    let metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal]
    let count = 100_000

    // The same measurement for both kinds of operation: made first, then queued and waited for.
    func queued(_ name: String, _ make: @escaping @Sendable (Int) -> Operation) {
        Benchmark(name, configuration: .init(metrics: metrics, maxDuration: .seconds(10), maxIterations: 10)) {
            benchmark in
            let operations = (0..<count).map(make)
            let queue = OperationQueue()
            benchmark.startMeasurement()
            queue.addOperations(operations, waitUntilFinished: true)
        }
    }
    queued("Operations 100k/BlockOperation on OperationQueue (baseline)") { index in BlockOperation { blackHole(index) }
    }
    queued("Operations 100k/AsyncOperation on OperationQueue") { _ in OperationsWorkload.ImmediateOperation() }

    let shapes: [(group: String, dependencies: @Sendable () -> [[Int]])] = [
        ("Operations chain 10k", { OperationsWorkload.chain(10_000) }),
        ("Operations DAG 10k", { OperationsWorkload.randomDAG(10_000) }),
        ("Operations layered DAG 10k", { GraphWorkload.small.dependencies }),
    ]
    for (group, dependencies) in shapes {
        // corelibs' OperationQueue takes seconds on some of these, and erratically, for one and
        // the same 10k DAG (BENCHMARKS.md#operations): five runs, whose min / median / max `ratios.py` prints.
        Benchmark(
            "\(group)/OperationQueue addDependency (baseline)",
            configuration: .init(metrics: metrics, warmupIterations: 0, maxDuration: .seconds(60), maxIterations: 5)
        ) { benchmark in
            let operations = OperationsWorkload.operations(dependencies())
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = OperationsWorkload.limit
            benchmark.startMeasurement()
            queue.addOperations(operations, waitUntilFinished: true)
        }

        Benchmark(
            "\(group)/TaskGraph bridge",
            configuration: .init(metrics: metrics, maxDuration: .seconds(10), maxIterations: 20)
        ) { benchmark in
            let operations = OperationsWorkload.operations(dependencies())
            benchmark.startMeasurement()
            let result = try await TaskGraph(operations: operations).run(limit: OperationsWorkload.limit)
            benchmark.stopMeasurement()
            precondition(result.allSucceeded, "\(group): an operation did not succeed")
        }

        // What any scheduler of these operations must pay: Foundation's own start() and finish
        // bookkeeping, with no scheduling at all (every shape lists dependencies before their
        // dependents, so starting them in index order on one thread is a valid order).
        Benchmark(
            "\(group)/start() in dependency order, one thread (floor)",
            configuration: .init(metrics: metrics, maxDuration: .seconds(10), maxIterations: 20)
        ) { benchmark in
            let operations = OperationsWorkload.operations(dependencies())
            benchmark.startMeasurement()
            for operation in operations { operation.start() }
            benchmark.stopMeasurement()
            precondition(operations.allSatisfy { $0.isFinished }, "\(group): an operation did not finish")
        }
    }
}
