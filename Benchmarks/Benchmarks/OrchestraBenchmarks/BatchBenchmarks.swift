import Benchmark
import Dispatch
import Foundation
import Orchestra

/// Benchmark 1: a batch of 100,000 no-op jobs, at most 8 at once, six ways.
///
/// Each measured iteration runs the whole batch, so the wall-clock figure is the time for
/// 100,000 jobs (divide by 100,000 for the cost per job). The hand-written sliding window over
/// one `ThrowingTaskGroup` is the baseline: it is what `concurrentMap(limit:)` replaces, and the
/// target is `concurrentMap` within 1.3x of it. `completions(limit:)` and `orderedResults(limit:)`
/// are measured alongside as the streaming alternatives (target: within 1.5x of
/// `concurrentMap`); `OperationQueue` and `DispatchGroup` + `DispatchSemaphore` are the patterns
/// hand-written code uses without Orchestra.
enum BatchWorkload {
    /// Jobs per measured iteration; `ratios.py` (`OPS_PER_ITERATION["Batch"]`) uses the same figure.
    static let jobCount = 100_000
    static let limit = 8
}

func registerBatchBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
        warmupIterations: 1,
        maxDuration: .seconds(3),
        maxIterations: 40
    )
    let jobs = 0..<BatchWorkload.jobCount
    let limit = BatchWorkload.limit

    Benchmark("Batch/concurrentMap", configuration: configuration) { _ in
        let results: [Void] = try await jobs.concurrentMap(limit: limit) { job in blackHole(job) }
        blackHole(results.count)
    }

    // The streaming form of the same batch: outcomes consumed as they complete, nothing stored.
    Benchmark("Batch/completions", configuration: configuration) { _ in
        for await completion in jobs.completions(limit: limit, { job in blackHole(job) }) {
            blackHole(completion.index)
        }
    }

    // The same, in input order: results that finish early wait for the ones before them.
    Benchmark("Batch/orderedResults", configuration: configuration) { _ in
        for await result in jobs.orderedResults(limit: limit, { job in blackHole(job) }) {
            blackHole(result)
        }
    }

    // The pattern concurrentMap packages: start `limit` children, then one more each time one ends.
    Benchmark("Batch/TaskGroup sliding window (baseline)", configuration: configuration) { _ in
        try await withThrowingTaskGroup(of: Void.self) { group in
            var iterator = jobs.makeIterator()
            for _ in 0..<limit {
                guard let job = iterator.next() else { break }
                group.addTask { blackHole(job) }
            }
            while try await group.next() != nil {
                if let job = iterator.next() {
                    group.addTask { blackHole(job) }
                }
            }
        }
    }

    // The NSOperationQueue version: every job queued up front, the queue admits 8 at once.
    Benchmark("Batch/OperationQueue", configuration: configuration) { _ in
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = limit
        for job in jobs {
            queue.addOperation(BlockOperation { blackHole(job) })
        }
        queue.waitUntilAllOperationsAreFinished()
    }

    // The GCD version: a semaphore of 8 throttles submission to a concurrent queue and a
    // group waits for the last job.
    Benchmark("Batch/DispatchGroup + DispatchSemaphore", configuration: configuration) { _ in
        let queue = DispatchQueue(label: "orchestra.benchmarks.batch", attributes: .concurrent)
        let group = DispatchGroup()
        let semaphore = DispatchSemaphore(value: limit)
        for job in jobs {
            semaphore.wait()
            queue.async(group: group) {
                blackHole(job)
                semaphore.signal()
            }
        }
        group.wait()
    }
}
