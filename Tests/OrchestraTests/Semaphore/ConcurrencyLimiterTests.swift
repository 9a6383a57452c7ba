import Orchestra
import Testing

@Suite("ConcurrencyLimiter", .timeLimit(.minutes(1)))
struct ConcurrencyLimiterTests {
    /// Starts `count` tasks that each take a slot and hold it until `release` is signalled.
    private func holders(
        _ count: Int, on limiter: ConcurrencyLimiter, release: AsyncEvent, admitted: EventLog<Int>
    ) -> [Task<Void, any Error>] {
        (0..<count).map { index in
            Task {
                try await limiter.withPermit {
                    admitted.append(index)
                    try await release.wait()
                }
            }
        }
    }

    @Test func admitsAtMostTheLimit() async throws {
        let limiter = ConcurrencyLimiter(limit: 2)
        let release = AsyncEvent()
        let admitted = EventLog<Int>()
        let tasks = holders(5, on: limiter, release: release, admitted: admitted)
        try await waitUntil("two run and three wait") { admitted.count == 2 && limiter.waitingCount == 3 }
        #expect(limiter.running == 2)
        release.signal()
        for task in tasks { try await task.value }
        #expect(admitted.count == 5)
        #expect(limiter.running == 0)
    }

    @Test func raisingTheLimitAdmitsWaitersAtOnce() async throws {
        let limiter = ConcurrencyLimiter(limit: 1)
        let release = AsyncEvent()
        let admitted = EventLog<Int>()
        let tasks = holders(4, on: limiter, release: release, admitted: admitted)
        try await waitUntil("one runs and three wait") { limiter.running == 1 && limiter.waitingCount == 3 }

        limiter.limit = 3
        // Admission happens inside the setter: the waiters are no longer queued.
        #expect(limiter.waitingCount == 1)
        #expect(limiter.running == 3)
        #expect(limiter.limit == 3)

        release.signal()
        for task in tasks { try await task.value }
        #expect(admitted.count == 4)
    }

    @Test func loweringTheLimitLetsRunningWorkFinish() async throws {
        let limiter = ConcurrencyLimiter(limit: 3)
        for _ in 0..<3 { #expect(limiter.tryAcquire()) }
        limiter.limit = 1
        #expect(limiter.running == 3, "nothing running is interrupted")
        #expect(!limiter.tryAcquire())

        let waiter = Task { try await limiter.acquire() }
        try await waitUntil("the waiter is queued") { limiter.waitingCount == 1 }
        limiter.release()
        limiter.release()
        #expect(limiter.waitingCount == 1, "running 1 of limit 1: still full")
        limiter.release()
        try await waiter.value
        #expect(limiter.running == 1)
        limiter.release()
        #expect(limiter.running == 0)
    }

    @Test func aZeroLimitPausesAdmissionUntilRaised() async throws {
        let limiter = ConcurrencyLimiter(limit: 0)
        let waiter = Task { try await limiter.acquire() }
        try await waitUntil("the waiter is queued") { limiter.waitingCount == 1 }
        limiter.limit = 1
        try await waiter.value
        #expect(limiter.running == 1)
    }

    @Test func aCancelledWaiterTakesNoSlot() async throws {
        let limiter = ConcurrencyLimiter(limit: 1)
        #expect(limiter.tryAcquire())
        let waiter = Task { try await limiter.acquire() }
        try await waitUntil("the waiter is queued") { limiter.waitingCount == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        limiter.release()
        #expect(limiter.running == 0)
        #expect(limiter.tryAcquire())
    }

    @Test func aNegativeLimitIsAProgrammerErrorNamingTheValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ConcurrencyLimiter(limit: -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("ConcurrencyLimiter(limit:): limit must be 0 or more, got -1"))
    }
}
