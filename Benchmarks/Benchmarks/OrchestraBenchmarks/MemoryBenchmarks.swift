import Benchmark
import Orchestra

/// Benchmark 3: memory stays flat in the number of inputs.
///
/// The same no-op batch (limit 8) runs over 10,000 and over 100,000 inputs, through
/// `concurrentMap` returning `Void` (so the result array costs nothing) and through
/// `completions(limit:)` consumed without storing anything. If the window holds O(limit) state,
/// the process's peak resident memory is the same for both sizes; if anything were kept per
/// input it would grow about tenfold. The "(baseline)" of each group is its 10,000-input run.
///
/// The unbounded task group (every input added at once, drained afterwards) is a control that
/// does keep per-input state: it shows the metric does see growth when there is some.
///
/// No warm-up iterations: package-benchmark takes the resident-memory baseline after warm-up, so
/// a warm-up would hide the growth from `peakMemoryResidentDelta`. Every benchmark runs in a
/// fresh process, so one benchmark's peak never leaks into another's.
enum MemoryWorkload {
    static let limit = 8
    static let sizes = [10_000, 100_000]

    static func label(_ size: Int) -> String {
        size == sizes[0] ? "\(size / 1_000)k (baseline)" : "\(size / 1_000)k"
    }
}

func registerMemoryBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta, .mallocCountTotal],
        warmupIterations: 0,
        maxDuration: .seconds(2),
        maxIterations: 10
    )
    let limit = MemoryWorkload.limit

    for size in MemoryWorkload.sizes {
        let inputs = 0..<size
        let label = MemoryWorkload.label(size)

        Benchmark("Memory concurrentMap Void/\(label)", configuration: configuration) { _ in
            let results: [Void] = try await inputs.concurrentMap(limit: limit) { input in blackHole(input) }
            blackHole(results.count)
        }

        Benchmark("Memory completions/\(label)", configuration: configuration) { _ in
            for await completion in inputs.completions(limit: limit, { input in blackHole(input) }) {
                blackHole(completion.index)
            }
        }

        Benchmark("Memory unbounded TaskGroup (control)/\(label)", configuration: configuration) { _ in
            await withTaskGroup(of: Void.self) { group in
                for input in inputs {
                    group.addTask { blackHole(input) }
                }
                await group.waitForAll()
            }
        }
    }
}
