import Benchmark
import Dispatch
import Foundation
import Orchestra

/// Benchmark 4: scheduling overhead of a task graph with no-op bodies, limit 8.
///
/// A layered random DAG (fixed seed): layers of 100 nodes, each node depending on 5 random
/// nodes of the layers before it, so about 5 edges per node. Three schedulers run the same
/// graph: `TaskGraph.run(limit: 8)`; a bare ~40-line TaskGroup scheduler (indegree counts, a
/// ready queue, at most 8 children; the baseline); and `OperationQueue` with `addDependency`
/// (10k only: corelibs Foundation rescans pending operations on every finish). Building the
/// graph is outside the measurement for all three. Targets: TaskGraph within 2x of the bare
/// scheduler per node; peak memory under 1 KB per node.
enum GraphWorkload {
    struct Graph: Sendable {
        var dependencies: [[Int]]
        var count: Int { dependencies.count }
    }

    static func layered(nodes: Int, seed: UInt64 = 42, layerWidth: Int = 100, edgesPerNode: Int = 5) -> Graph {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
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
        return Graph(dependencies: dependencies)
    }

    static let small = layered(nodes: 10_000)
    static let large = layered(nodes: 100_000)

    static func taskGraph(_ graph: Graph) -> TaskGraph {
        let taskGraph = TaskGraph()
        for node in 0..<graph.count {
            taskGraph.add(id: "n\(node)", dependsOn: graph.dependencies[node].map { "n\($0)" }) { _ in node }
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
                    group.addTask { blackHole(node); return node }
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
}

func registerTaskGraphBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident, .peakMemoryResidentDelta],
        warmupIterations: 1,
        maxDuration: .seconds(5),
        maxIterations: 10
    )
    for (label, graph) in [("10k", GraphWorkload.small), ("100k", GraphWorkload.large)] {
        Benchmark("Graph \(label)/bare TaskGroup scheduler (baseline)", configuration: configuration) { benchmark in
            benchmark.startMeasurement()
            await GraphWorkload.bareScheduler(graph, limit: 8)
        }
        Benchmark("Graph \(label)/TaskGraph", configuration: configuration) { benchmark in
            let taskGraph = GraphWorkload.taskGraph(graph)
            benchmark.startMeasurement()
            let result = try await taskGraph.run(limit: 8)
            benchmark.stopMeasurement()
            blackHole(result.allSucceeded)
        }
        // The part of a run that is validation (ids resolved, cycle check, path lengths).
        Benchmark("Graph \(label)/TaskGraph validate only", configuration: configuration) { benchmark in
            let taskGraph = GraphWorkload.taskGraph(graph)
            benchmark.startMeasurement()
            try taskGraph.validate()
        }
    }
    Benchmark(
        "Graph 10k/OperationQueue addDependency",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], warmupIterations: 0, maxDuration: .seconds(30), maxIterations: 2)
    ) { benchmark in
        let graph = GraphWorkload.small
        let operations = (0..<graph.count).map { node in BlockOperation { blackHole(node) } }
        for (node, dependencies) in graph.dependencies.enumerated() {
            for dependency in dependencies { operations[node].addDependency(operations[dependency]) }
        }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 8
        benchmark.startMeasurement()
        queue.addOperations(operations, waitUntilFinished: true)
    }
}
