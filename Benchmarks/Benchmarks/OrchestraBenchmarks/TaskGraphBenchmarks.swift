import Benchmark
import Dispatch
import Foundation
@_spi(Simulation) import Orchestra

/// Benchmark 4: scheduling overhead of a task graph with no-op bodies, limit 8.
///
/// A layered random DAG (fixed seed): layers of 100 nodes, each node depending on 5 distinct
/// random nodes of the 5 layers before it, so about 5 edges per node (10,000 nodes / 49,500
/// edges and 100,000 nodes / 499,500 edges). Each size is one group:
///
/// - `bare TaskGroup scheduler (baseline)`: ~40 lines written here (indegree counts, a ready
///   queue, at most 8 children in one TaskGroup). Its setup (the counts and dependent lists) is
///   measured, as validation is for the graph.
/// - `TaskGraph run`: `run(limit: 8)` of a graph built with `add(id:dependsOn:)` before the
///   measurement; every run validates, so validation is inside.
/// - `TaskGraph build`: the `add(id:dependsOn:)` calls alone (ids made beforehand; each node's
///   dependency array of ids is made in the loop, as a caller reading data would).
/// - `TaskGraph validate only`: the part of a run that is validation.
/// - `OperationQueue addDependency` (10k only): operations and dependencies made before the
///   measurement, then `addOperations(_:waitUntilFinished: true)` with 8 at once.
///
/// No warm-up iterations: package-benchmark takes the starting point of
/// `peakMemoryResidentDelta` after warm-up, and a warm-up would leave freed pages resident and
/// hide part of the peak. Without it, the delta of `TaskGraph run` counts the graph's
/// description (built in the iteration, before `startMeasurement()`) plus the run, and that of
/// `TaskGraph build` the description alone. The peak only grows, and creeps up over iterations
/// as freed memory stays in the allocator's arenas, so `ratios.py` takes the first iteration's
/// delta (the p0) and divides it by the node count.
/// Targets: TaskGraph within 2x of the bare scheduler; under 1 KB per node.
enum GraphWorkload {
    static let limit = 8

    struct Graph: Sendable {
        /// The indices each node depends on.
        let dependencies: [[Int]]
        /// "n0", "n1", …: at most 15 UTF-8 bytes, so stored inline without an allocation.
        let ids: [String]

        var count: Int { dependencies.count }
    }

    static func layered(nodes: Int, seed: UInt64 = 42, layerWidth: Int = 100, edgesPerNode: Int = 5) -> Graph {
        var random = SplitMix64(seed: seed)
        func next() -> UInt64 { random.next() }
        var dependencies: [[Int]] = []
        dependencies.reserveCapacity(nodes)
        for node in 0..<nodes {
            let layerStart = node / layerWidth * layerWidth
            guard layerStart > 0 else {
                dependencies.append([])
                continue
            }
            let window = min(layerStart, 5 * layerWidth)
            var picks = Set<Int>()
            while picks.count < edgesPerNode { picks.insert(layerStart - 1 - Int(next() % UInt64(window))) }
            dependencies.append(picks.sorted())
        }
        return Graph(dependencies: dependencies, ids: (0..<nodes).map { "n\($0)" })
    }

    /// A deep random DAG: node `i` depends on up to 5 distinct nodes drawn uniformly from
    /// the nodes before it (fewer for the first five), so paths are long and a node's
    /// dependencies lie anywhere in the graph, not in a window behind it.
    static func deep(nodes: Int, seed: UInt64 = 42, edgesPerNode: Int = 5) -> Graph {
        var random = SplitMix64(seed: seed)
        var dependencies: [[Int]] = []
        dependencies.reserveCapacity(nodes)
        for node in 0..<nodes {
            var picks = Set<Int>()
            while picks.count < min(edgesPerNode, node) { picks.insert(Int(random.next() % UInt64(node))) }
            dependencies.append(picks.sorted())
        }
        return Graph(dependencies: dependencies, ids: (0..<nodes).map { "n\($0)" })
    }

    /// Built on first use, in the `setup` of the benchmarks that need them: before the memory
    /// baseline is taken, and only in those benchmarks' processes.
    static let one = layered(nodes: 1)
    static let thousand = layered(nodes: 1_000)
    static let deepThousand = deep(nodes: 1_000)
    static let small = layered(nodes: 10_000)
    static let large = layered(nodes: 100_000)
    static let huge = layered(nodes: 1_000_000)
    static let deepSmall = deep(nodes: 10_000)
    static let deepLarge = deep(nodes: 100_000)

    static func taskGraph(_ graph: Graph) -> TaskGraph {
        let taskGraph = TaskGraph()
        let ids = graph.ids
        for node in 0..<graph.count {
            taskGraph.add(id: ids[node], dependsOn: graph.dependencies[node].map { ids[$0] }) { _ in node }
        }
        return taskGraph
    }

    /// The bare scheduler: what a developer writes by hand around one TaskGroup.
    static func bareScheduler(_ graph: Graph, limit: Int) async {
        var remaining = graph.dependencies.map(\.count)
        var dependents = [[Int]](repeating: [], count: graph.count)
        for (node, dependencies) in graph.dependencies.enumerated() {
            for dependency in dependencies { dependents[dependency].append(node) }
        }
        var ready = (0..<graph.count).filter { remaining[$0] == 0 }
        var head = 0
        await withTaskGroup(of: Int.self) { group in
            var running = 0
            while head < ready.count || running > 0 {
                while running < limit, head < ready.count {
                    let node = ready[head]
                    head += 1
                    running += 1
                    group.addTask {
                        blackHole(node)
                        return node
                    }
                }
                guard let finished = await group.next() else { break }
                running -= 1
                for dependent in dependents[finished] {
                    remaining[dependent] -= 1
                    if remaining[dependent] == 0 { ready.append(dependent) }
                }
            }
        }
    }

    /// The bare scheduler holding what any graph runner holds per node: a closure of the
    /// node's own (made before the measurement, as a graph's are) that it calls, and the result
    /// it keeps. A control for how the cost per node grows with the graph: these closures and
    /// results are memory the bare scheduler does not touch and a graph runner must.
    static func bareScheduler(
        _ graph: Graph, bodies: [@Sendable () -> Int], limit: Int
    ) async -> [Int] {
        var remaining = graph.dependencies.map(\.count)
        var dependents = [[Int]](repeating: [], count: graph.count)
        for (node, dependencies) in graph.dependencies.enumerated() {
            for dependency in dependencies { dependents[dependency].append(node) }
        }
        var results = [Int](repeating: -1, count: graph.count)
        var ready = (0..<graph.count).filter { remaining[$0] == 0 }
        var head = 0
        await withTaskGroup(of: (Int, Int).self) { group in
            var running = 0
            while head < ready.count || running > 0 {
                while running < limit, head < ready.count {
                    let node = ready[head]
                    let body = bodies[node]
                    head += 1
                    running += 1
                    group.addTask { (node, body()) }
                }
                guard let (finished, result) = await group.next() else { break }
                running -= 1
                results[finished] = result
                for dependent in dependents[finished] {
                    remaining[dependent] -= 1
                    if remaining[dependent] == 0 { ready.append(dependent) }
                }
            }
        }
        return results
    }

    /// `TaskGraph.run(limit: 8)` of `graph`, built with `add(id:dependsOn:)` in the iteration,
    /// before the measurement starts.
    static func registerRun(
        _ name: String, configuration: Benchmark.Configuration, graph: @escaping @Sendable () -> Graph
    ) {
        Benchmark(
            name, configuration: configuration,
            closure: { benchmark in
                let taskGraph = GraphWorkload.taskGraph(graph())
                benchmark.startMeasurement()
                let result = try await taskGraph.run(limit: limit)
                benchmark.stopMeasurement()
                precondition(result.allSucceeded, "\(name): a node did not succeed")
            }, setup: { _ = graph() })
    }

    /// The same graph as `BlockOperation`s linked by `addDependency`, ready to be queued.
    static func operations(_ graph: Graph) -> [Operation] {
        let operations = (0..<graph.count).map { node in BlockOperation { blackHole(node) } }
        for (node, dependencies) in graph.dependencies.enumerated() {
            for dependency in dependencies { operations[node].addDependency(operations[dependency]) }
        }
        return operations
    }
}

func registerTaskGraphBenchmarks() {
    let metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal, .peakMemoryResident, .peakMemoryResidentDelta]
    // `1 node`: a run's fixed costs (set-up, validation, the first worker, the end), measured
    // apart from the cost per node (issue 38).
    let sizes: [(label: String, graph: @Sendable () -> GraphWorkload.Graph, iterations: Int)] = [
        ("1 node", { GraphWorkload.one }, 2_000),
        ("1k", { GraphWorkload.thousand }, 300),
        ("deep 1k", { GraphWorkload.deepThousand }, 300),
        ("10k", { GraphWorkload.small }, 30),
        ("100k", { GraphWorkload.large }, 10),
        ("1M", { GraphWorkload.huge }, 5),
        ("deep 10k", { GraphWorkload.deepSmall }, 30),
        ("deep 100k", { GraphWorkload.deepLarge }, 10),
    ]
    let limit = GraphWorkload.limit

    for (label, graph, iterations) in sizes {
        let configuration = Benchmark.Configuration(
            metrics: metrics, warmupIterations: 0, maxDuration: .seconds(label == "1M" ? 30 : 5),
            maxIterations: iterations
        )
        let setup: @Sendable () async throws -> Void = { _ = graph() }

        Benchmark(
            "Graph \(label)/bare TaskGroup scheduler (baseline)", configuration: configuration,
            closure: { benchmark in
                let graph = graph()
                benchmark.startMeasurement()
                await GraphWorkload.bareScheduler(graph, limit: limit)
            }, setup: setup)

        Benchmark(
            "Graph \(label)/bare scheduler with bodies and results (control)", configuration: configuration,
            closure: { benchmark in
                let graph = graph()
                let bodies = (0..<graph.count).map { node -> @Sendable () -> Int in { node } }
                benchmark.startMeasurement()
                let results = await GraphWorkload.bareScheduler(graph, bodies: bodies, limit: limit)
                benchmark.stopMeasurement()
                precondition(results.last == graph.count - 1, "bare scheduler: the last node did not run")
            }, setup: setup)

        GraphWorkload.registerRun("Graph \(label)/TaskGraph run", configuration: configuration, graph: graph)

        Benchmark(
            "Graph \(label)/TaskGraph build", configuration: configuration,
            closure: { benchmark in
                let graph = graph()
                benchmark.startMeasurement()
                let taskGraph = GraphWorkload.taskGraph(graph)
                benchmark.stopMeasurement()
                blackHole(taskGraph)
            }, setup: setup)

        Benchmark(
            "Graph \(label)/TaskGraph validate only", configuration: configuration,
            closure: { benchmark in
                let taskGraph = GraphWorkload.taskGraph(graph())
                benchmark.startMeasurement()
                try taskGraph.validate()
                benchmark.stopMeasurement()
                // Freed after the measurement, as in the other benchmarks of the group.
                blackHole(taskGraph)
            }, setup: setup)
    }

    // 10k only, and few iterations: swift-corelibs-foundation's OperationQueue is far slower
    // on long chains of dependent operations (~7 s for a 10,000-operation chain).
    Benchmark(
        "Graph 10k/OperationQueue addDependency",
        configuration: .init(metrics: metrics, warmupIterations: 0, maxDuration: .seconds(30), maxIterations: 3),
        closure: { benchmark in
            let operations = GraphWorkload.operations(GraphWorkload.small)
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = limit
            benchmark.startMeasurement()
            queue.addOperations(operations, waitUntilFinished: true)
        },
        setup: { _ = GraphWorkload.small }
    )
}
