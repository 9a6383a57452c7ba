import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@Suite("ConcurrencyLimiter", .timeLimit(.minutes(1)), .takesTurns)
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

    @Test(.enabled(if: ExitTests.areEnabled)) func aNegativeLimitIsAProgrammerErrorNamingTheValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ConcurrencyLimiter(limit: -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("ConcurrencyLimiter(limit:): limit must be 0 or more, got -1"))
    }

    @Test func waitersAreAdmittedFirstInFirstOut() async throws {
        let limiter = ConcurrencyLimiter(limit: 1)
        #expect(limiter.tryAcquire())
        let admitted = EventLog<Int>()
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<8 {
            waiters.append(
                Task {
                    try await limiter.acquire()
                    admitted.append(index)
                })
            try await waitUntil("waiter \(index) is queued") { limiter.waitingCount == index + 1 }
        }
        for round in 0..<8 {
            limiter.release()  // the slot held before, then each admitted waiter's in turn
            try await waitUntil("waiter \(round) is admitted") { admitted.count == round + 1 }
            #expect(limiter.running == 1)
        }
        for waiter in waiters { try await waiter.value }
        #expect(admitted.events == Array(0..<8))
    }

    @Test func raisingTheLimitAdmitsTheLongestWaitingFirst() async throws {
        let limiter = ConcurrencyLimiter(limit: 1)
        #expect(limiter.tryAcquire())
        let admitted = EventLog<Int>()
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<6 {
            waiters.append(
                Task {
                    try await limiter.acquire()
                    admitted.append(index)
                })
            try await waitUntil("waiter \(index) is queued") { limiter.waitingCount == index + 1 }
        }
        limiter.limit = 4
        try await waitUntil("three admitted") { admitted.count == 3 }
        #expect(Set(admitted.events) == [0, 1, 2])
        #expect(limiter.waitingCount == 3)
        limiter.limit = 7
        for waiter in waiters { try await waiter.value }
        #expect(Set(admitted.events.suffix(3)) == [3, 4, 5])
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func settingANegativeLimitIsAProgrammerErrorNamingTheValue() async {
        let property = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let limiter = ConcurrencyLimiter(limit: 1)
            limiter.limit = -2
        }
        let propertyMessage = String(decoding: property?.standardErrorContent ?? [], as: UTF8.self)
        #expect(propertyMessage.contains("ConcurrencyLimiter.limit must be 0 or more, got -2"), "\(propertyMessage)")
        let method = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ConcurrencyLimiter(limit: 1).setLimit(-3)
        }
        let methodMessage = String(decoding: method?.standardErrorContent ?? [], as: UTF8.self)
        #expect(methodMessage.contains("ConcurrencyLimiter.limit must be 0 or more, got -3"), "\(methodMessage)")
    }
}
