import Benchmark
import Dispatch
import Foundation
import Orchestra

/// Benchmark 2: the uncontended cost of taking and returning a permit.
///
/// Each measured iteration does 1,000 pairs (`scalingFactor: .kilo`), so the measurement's own
/// overhead is spread over a thousand operations; package-benchmark's text output shows the
/// figure per pair (the `*` columns), and `ratios.py` divides by 1,000 the same way. The target is
/// `AsyncSemaphore.wait()` + `signal()` under 100 ns. `DispatchSemaphore` wait/signal, the
/// blocking primitive it replaces, is the baseline; an `NSLock` pair shows the floor of any
/// lock-based implementation.
enum SemaphoreWorkload {
    /// Pairs per measured iteration; `ratios.py` (`OPS_PER_ITERATION["Semaphore"]`) uses the same figure.
    static var scalingFactor: BenchmarkScalingFactor { .kilo }
    /// The contended benchmarks: tasks sharing one permit, and pairs each task does per
    /// iteration (`ratios.py`'s `OPS_PER_ITERATION["Semaphore contended"]` is their product).
    static let contendingTasks = 8
    static let pairsPerTask = 1_000

    /// `contendingTasks` tasks each run `pair` `pairsPerTask` times, all at once.
    static func contend(_ pair: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<contendingTasks {
                group.addTask {
                    for index in 0..<pairsPerTask { try await pair(index) }
                }
            }
            try await group.waitForAll()
        }
    }
}

/// The lock-only design of a limiter, one lock for every take and every give-back: what
/// `AsyncSemaphore` had before its atomic fast path, and `ConcurrencyLimiter` until it shared
/// that engine. The contended group's baseline.
final class LockOnlyLimiter: @unchecked Sendable {
    private let lock = NSLock()
    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { available = limit }

    func acquire() async {
        if takeFree() { return }
        await withCheckedContinuation { continuation in
            // A slot given back since the first look is taken at once.
            if queueOrTake(continuation) { continuation.resume() }
        }
    }

    func release() {
        let waiter: CheckedContinuation<Void, Never>? = lock.withLock {
            if waiters.isEmpty {
                available += 1
                return nil
            }
            return waiters.removeFirst()
        }
        waiter?.resume()
    }

    private func takeFree() -> Bool {
        lock.withLock {
            guard available > 0 else { return false }
            available -= 1
            return true
        }
    }

    private func queueOrTake(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        lock.withLock {
            if available > 0 {
                available -= 1
                return true
            }
            waiters.append(continuation)
            return false
        }
    }
}

func registerSemaphoreBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        warmupIterations: 10,
        scalingFactor: SemaphoreWorkload.scalingFactor,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    Benchmark("Semaphore/AsyncSemaphore wait+signal", configuration: configuration) { benchmark in
        let semaphore = AsyncSemaphore(value: 1)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await semaphore.wait()
            semaphore.signal()
        }
    }

    Benchmark("Semaphore/AsyncSemaphore withPermit", configuration: configuration) { benchmark in
        let semaphore = AsyncSemaphore(value: 1)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            try await semaphore.withPermit { blackHole(index) }
        }
    }

    Benchmark("Semaphore/ConcurrencyLimiter acquire+release", configuration: configuration) { benchmark in
        let limiter = ConcurrencyLimiter(limit: 1)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await limiter.acquire()
            limiter.release()
        }
    }

    Benchmark("Semaphore/DispatchSemaphore wait+signal (baseline)", configuration: configuration) { benchmark in
        let semaphore = DispatchSemaphore(value: 1)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            semaphore.wait()
            semaphore.signal()
        }
    }

    // Contended: 8 tasks share one permit, 1,000 pairs each per iteration (`Semaphore contended`
    // counts 8,000 operations). The baseline is the limiter, which is the lock-only design the
    // semaphore had before its atomic fast path (one lock for every wait and every signal).
    let contended = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], warmupIterations: 3, maxDuration: .seconds(2), maxIterations: 10_000)
    Benchmark("Semaphore contended/AsyncSemaphore, 8 tasks, 1 permit", configuration: contended) { benchmark in
        let semaphore = AsyncSemaphore(value: 1)
        benchmark.startMeasurement()
        try await SemaphoreWorkload.contend { index in try await semaphore.withPermit { blackHole(index) } }
    }

    Benchmark("Semaphore contended/ConcurrencyLimiter, 8 tasks, 1 slot", configuration: contended) { benchmark in
        let limiter = ConcurrencyLimiter(limit: 1)
        benchmark.startMeasurement()
        try await SemaphoreWorkload.contend { index in try await limiter.withPermit { blackHole(index) } }
    }

    Benchmark(
        "Semaphore contended/lock-only limiter, 8 tasks, 1 slot (baseline)", configuration: contended
    ) { benchmark in
        let limiter = LockOnlyLimiter(limit: 1)
        benchmark.startMeasurement()
        try await SemaphoreWorkload.contend { index in
            await limiter.acquire()
            blackHole(index)
            limiter.release()
        }
    }

    Benchmark("Semaphore/NSLock lock+unlock", configuration: configuration) { benchmark in
        let lock = NSLock()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            lock.lock()
            lock.unlock()
        }
    }
}
