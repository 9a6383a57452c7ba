import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

/// `KeyedRateLimiter`: a bucket per key from its rule, keys independent, and memory bounded by
/// the keys in use however many keys pass.
@Suite("KeyedRateLimiter", .timeLimit(.minutes(1)), .takesTurns)
struct KeyedRateLimiterTests {
    @Test func keysAreIndependentAndAKeyWithoutARateIsNotLimited() async throws {
        let clock = ManualClock()
        let limiter = KeyedRateLimiter<String>(
            rates: ["api.github.com": .perHour(5_000)], default: .perSecond(1), clock: clock)
        try await limiter.acquire("api.github.com")
        try await limiter.acquire("example.com")
        let waiter = Task { try await limiter.acquire("example.com") }
        try await waitUntil("a second request to example.com waits") { limiter.waitingCount(for: "example.com") == 1 }
        // Another key is not held up by it.
        try await limiter.acquire("example.org")
        #expect(!limiter.tryAcquire("api.github.com"), "5000/h: the next permit is 0.72 s away")
        clock.advance(by: .milliseconds(720))
        #expect(limiter.tryAcquire("api.github.com"))
        clock.advance(by: .milliseconds(280))
        try await waiter.value
        #expect(limiter.waitingCount(for: "example.com") == 0)

        let unlimited = KeyedRateLimiter<Int>(clock: clock) { $0 == 0 ? .perSecond(1) : nil }
        for _ in 0..<1_000 { try await unlimited.acquire(1) }
        #expect((0..<1_000).allSatisfy { _ in unlimited.tryAcquire(2) })
        #expect(unlimited.tryAcquire(0) && !unlimited.tryAcquire(0))
        #expect(unlimited.bucketCount == 1, "keys without a rate keep no bucket")
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func aKeysWaitersAreServedInOrderAtItsRate() async throws {
        let clock = ManualClock()
        let limiter = KeyedRateLimiter<String>(burst: 1, clock: clock) { _ in .perSecond(2) }
        let granted = EventLog<Int>()
        var tasks: [Task<Void, any Error>] = []
        for caller in 0..<4 {
            tasks.append(
                Task {
                    try await limiter.acquire("k")
                    granted.append(caller)
                })
            try await waitUntil("caller \(caller) is granted or queued") {
                granted.count + limiter.waitingCount(for: "k") == caller + 1
            }
        }
        for grants in 2...4 {
            try await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(500))
            try await waitUntil("\(grants) granted") { granted.count == grants }
        }
        for task in tasks { try await task.value }
        #expect(granted.events == [0, 1, 2, 3])
        #expect(clock.now.offset == .milliseconds(1_500))
    }

    @Test func aCancelledWaiterOfAKeyThrowsAndTheKeysBucketStays() async throws {
        let clock = ManualClock()
        let limiter = KeyedRateLimiter<String>(clock: clock) { _ in .perMinute(1) }
        #expect(limiter.tryAcquire("k"))
        let waiter = Task { try await limiter.acquire("k") }
        try await waitUntil("the waiter is queued") { limiter.waitingCount(for: "k") == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await limiter.acquire("unused")
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        #expect(!limiter.tryAcquire("k"), "the bucket used a minute ago is still there")
        #expect(limiter.tryAcquire("unused"))
    }

    /// 100,000 keys, each used once, a thousand per second of manual time: the buckets kept
    /// follow the keys of the last second or two, not every key seen. Without the sweep the
    /// count reaches 100,000.
    @Test func idleKeysAreDroppedSoMemoryStaysBounded() async throws {
        let clock = ManualClock()
        let limiter = KeyedRateLimiter<Int>(burst: 2, clock: clock) { _ in .per(2, .seconds(1)) }
        var largest = 0
        var refused: [Int] = []
        for key in 0..<100_000 {
            if key % 1_000 == 0 { clock.advance(by: .seconds(1)) }
            if !limiter.tryAcquire(key) { refused.append(key) }
            largest = max(largest, limiter.bucketCount)
        }
        #expect(refused.isEmpty, "a new key has a full bucket")
        #expect(largest <= 2 * 2 * 1_000 + 64, "largest bucket count \(largest)")
        // A bucket still refilling is kept, so a dropped key never gets more than its rate.
        #expect(limiter.tryAcquire(99_999) && !limiter.tryAcquire(99_999))
        // A bucket full again was dropped and comes back full: the same as if it had stayed.
        #expect(limiter.tryAcquire(0) && limiter.tryAcquire(0) && !limiter.tryAcquire(0))
    }

    final class FakeBucket: Sendable {
        let idle: Bool
        init(idle: Bool) { self.idle = idle }
    }

    @Test func aSweepKeepsPinnedAndRefillingBucketsAndNeverTheOneBeingAdded() {
        var registry = RateLimiterRegistry<Int, FakeBucket>()
        // Key 0 waits (pinned) though idle; key 1 is refilling; the rest are idle.
        _ = registry.insert(FakeBucket(idle: true), for: 0, pinning: true, grantsNow: { _ in false }, isIdle: \.idle)
        _ = registry.insert(FakeBucket(idle: false), for: 1, pinning: true, grantsNow: { _ in true }, isIdle: \.idle)
        for key in 2..<1_000 {
            let lookup = registry.insert(
                FakeBucket(idle: true), for: key, pinning: true, grantsNow: { _ in true }, isIdle: \.idle)
            guard case .granted = lookup else {
                Issue.record("key \(key) is granted from its new bucket")
                return
            }
            #expect(registry.limiter(for: key) != nil, "key \(key): the bucket just added is kept")
            #expect(registry.count <= RateLimiterRegistry<Int, FakeBucket>.minimumSweep + 2)
        }
        #expect(registry.limiter(for: 0) != nil && registry.limiter(for: 1) != nil)
        registry.unpin(0)
        for key in 1_000..<1_100 {
            _ = registry.insert(
                FakeBucket(idle: true), for: key, pinning: false, grantsNow: { _ in true }, isIdle: \.idle)
        }
        #expect(registry.limiter(for: 0) == nil, "unpinned and idle: dropped")
        #expect(registry.limiter(for: 1) != nil)
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func aBurstBelowOneIsAProgrammerError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = KeyedRateLimiter<String>(burst: 0) { _ in .perSecond(1) }
        }
        #expect(text(result).contains("KeyedRateLimiter(burst:): burst must be 1 or more, got 0"))
    }

    private func text(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }
}
