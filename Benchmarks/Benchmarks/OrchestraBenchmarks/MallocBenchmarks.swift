import Benchmark
import Foundation
import Orchestra
import OrchestraOperations

/// The deterministic metric CI guards: allocations (`mallocCountTotal`) of each primitive's
/// hot path, checked against the thresholds in `Benchmarks/Thresholds/` by `.ci/run`.
///
/// Timings stay out of CI (the machines are shared and noisy); an allocation count moves only
/// when the code does. Each benchmark is small (10,000 items at most) so the whole group runs
/// in seconds, and measures nothing but allocations. A count more than 5 % above its threshold
/// (the p90 of the iterations) fails CI; a count more than 5 % below it is reported so the
/// threshold can be lowered on purpose:
///
///     swift package --package-path Benchmarks --allow-writing-to-package-directory \
///         benchmark thresholds update --filter 'Mallocs-.*' --path Thresholds
///
/// The names have neither `/` nor spaces: package-benchmark writes a threshold file with those
/// replaced by `_` but looks it up by the name as it is.
enum MallocWorkload {
    static let items = 10_000
    static let limit = 8
}

func registerMallocBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.mallocCountTotal],
        warmupIterations: 2,
        maxDuration: .seconds(10),
        maxIterations: 15,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 5.0])]
    )
    let items = 0..<MallocWorkload.items
    let limit = MallocWorkload.limit

    Benchmark("Mallocs-AsyncSemaphore-10k-wait+signal", configuration: configuration) { benchmark in
        let semaphore = AsyncSemaphore(value: 1)
        benchmark.startMeasurement()
        for _ in items {
            try await semaphore.wait()
            semaphore.signal()
        }
    }

    Benchmark("Mallocs-concurrentMap-10k-limit-8", configuration: configuration) { _ in
        let results = try await items.concurrentMap(limit: limit) { $0 }
        blackHole(results.count)
    }

    Benchmark("Mallocs-completions-10k-limit-8", configuration: configuration) { _ in
        for await completion in items.completions(limit: limit, { $0 }) { blackHole(completion.index) }
    }

    Benchmark("Mallocs-orderedResults-10k-limit-8", configuration: configuration) { _ in
        for await result in items.orderedResults(limit: limit, { $0 }) { blackHole(result) }
    }

    let graphs: [(name: String, graph: @Sendable () -> GraphWorkload.Graph)] = [
        ("layered", { GraphWorkload.small }),
        ("deep", { GraphWorkload.deepSmall }),
    ]
    for (name, graph) in graphs {
        GraphWorkload.registerRun(
            "Mallocs-TaskGraph-run-10k-\(name)-limit-8", configuration: configuration, graph: graph)
    }

    Benchmark(
        "Mallocs-TaskGraph(operations:)-10k-layered-limit-8", configuration: configuration,
        closure: { benchmark in
            let operations = OperationsWorkload.operations(GraphWorkload.small.dependencies)
            benchmark.startMeasurement()
            let result = try await TaskGraph(operations: operations).run(limit: limit)
            benchmark.stopMeasurement()
            precondition(result.allSucceeded, "Mallocs TaskGraph(operations:): an operation did not succeed")
        }, setup: { _ = GraphWorkload.small })
}
