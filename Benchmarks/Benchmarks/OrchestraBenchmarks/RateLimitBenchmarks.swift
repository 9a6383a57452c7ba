import Benchmark
import Foundation
import Orchestra

/// Rate limits (issue 36): the cost of a permit when one is free, and 100,000 permits at a
/// high rate, against the token bucket people write by hand (a count refilled from the clock
/// under a lock, and `Task.sleep` until the next token when it is empty).
///
/// "Rate" does 1,000 acquires per measured iteration (`scalingFactor: .kilo`): the figures are
/// per acquire. "Rate 100k" does 100,000 acquires at 1,000,000 a second with a burst of 1,000,
/// so an iteration cannot take less than 99 ms; the figure says how close each gets to the rate
/// it was given, and at what cost in allocations.
enum RateLimitWorkload {
    /// `ratios.py`'s `OPS_PER_ITERATION["Rate"]`.
    static var scalingFactor: BenchmarkScalingFactor { .kilo }
    static let manyAcquires = 100_000
    static let highRate = Rate.perSecond(1_000_000)
    static let highRateBurst = 1_000
    /// A rate no run reaches: every acquire finds a permit.
    static let unreachable = Rate.per(.max, .seconds(1))
}

/// A value behind a lock, the minimal `Locked` a hand-written bucket would carry (Orchestra's
/// own `Locked` is `package`, out of reach of this package): `NSLock` is a `pthread_mutex_t` on
/// Linux, like Orchestra's.
final class BucketLocked<State>: @unchecked Sendable {
    // `@unchecked`: `state` is only read and written under `lock`.
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    func withLock<Result>(_ body: (inout State) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }
}

/// The hand-written token bucket a rate limiter replaces: tokens refilled from the elapsed
/// time on every call, and a `Task.sleep` for the missing fraction of a token when empty,
/// checked again after it (the sleep-polling loop).
final class HandWrittenTokenBucket: Sendable {
    private struct State {
        var tokens: Double
        var refilled = ContinuousClock.now
    }

    private let perSecond: Double
    private let capacity: Double
    private let state: BucketLocked<State>

    init(perSecond: Double, capacity: Double) {
        self.perSecond = perSecond
        self.capacity = capacity
        self.state = BucketLocked(State(tokens: capacity))
    }

    func acquire() async throws {
        while true {
            let missing: Double? = state.withLock { state in
                let now = ContinuousClock.now
                let elapsed = state.refilled.duration(to: now)
                state.refilled = now
                let (seconds, attoseconds) = elapsed.components
                state.tokens = min(capacity, state.tokens + (Double(seconds) + Double(attoseconds) / 1e18) * perSecond)
                if state.tokens >= 1 {
                    state.tokens -= 1
                    return nil
                }
                return 1 - state.tokens
            }
            guard let missing else { return }
            try await Task.sleep(for: .nanoseconds(Int64((missing / perSecond * 1e9).rounded(.up))))
        }
    }
}

func registerRateLimitBenchmarks() {
    let perAcquire = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        warmupIterations: 10,
        scalingFactor: RateLimitWorkload.scalingFactor,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    Benchmark("Rate/RateLimiter acquire, a permit free", configuration: perAcquire) { benchmark in
        let limiter = RateLimiter(rate: RateLimitWorkload.unreachable)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await limiter.acquire()
        }
    }

    Benchmark("Rate/RateLimiter tryAcquire, a permit free", configuration: perAcquire) { benchmark in
        let limiter = RateLimiter(rate: RateLimitWorkload.unreachable)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(limiter.tryAcquire())
        }
    }

    Benchmark("Rate/KeyedRateLimiter acquire, a permit free", configuration: perAcquire) { benchmark in
        let limiter = KeyedRateLimiter<Int> { _ in RateLimitWorkload.unreachable }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            try await limiter.acquire(index & 7)
        }
    }

    Benchmark("Rate/hand-written token bucket acquire, a token free (baseline)", configuration: perAcquire) {
        benchmark in
        let bucket = HandWrittenTokenBucket(perSecond: 1e18, capacity: 1e18)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await bucket.acquire()
        }
    }

    let many = Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 20
    )

    Benchmark("Rate 100k/RateLimiter, 1M a second", configuration: many) { benchmark in
        let limiter = RateLimiter(rate: RateLimitWorkload.highRate, burst: RateLimitWorkload.highRateBurst)
        benchmark.startMeasurement()
        for _ in 0..<RateLimitWorkload.manyAcquires {
            try await limiter.acquire()
        }
    }

    Benchmark("Rate 100k/hand-written token bucket, 1M a second (baseline)", configuration: many) { benchmark in
        let bucket = HandWrittenTokenBucket(perSecond: 1e6, capacity: Double(RateLimitWorkload.highRateBurst))
        benchmark.startMeasurement()
        for _ in 0..<RateLimitWorkload.manyAcquires {
            try await bucket.acquire()
        }
    }
}
