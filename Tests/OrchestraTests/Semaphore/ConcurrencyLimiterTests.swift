@_spi(Simulation) import Orchestra
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

    /// Starts `count` tasks that each wait for a slot (and log their index once admitted),
    /// one after the other, each queued before the next starts.
    private func queuedWaiters(
        _ count: Int, on limiter: ConcurrencyLimiter, admitted: EventLog<Int>
    ) async throws -> [Task<Void, any Error>] {
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<count {
            waiters.append(
                Task {
                    try await limiter.acquire()
                    admitted.append(index)
                })
            try await waitUntil("waiter \(index) is queued") { limiter.waitingCount == index + 1 }
        }
        return waiters
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

    @Test func aLoweredLimitIsPaidBackBeforeAnyWaiterIsAdmitted() async throws {
        let limiter = ConcurrencyLimiter(limit: 4)
        for _ in 0..<4 { #expect(limiter.tryAcquire()) }
        let admitted = EventLog<Int>()
        let waiters = try await queuedWaiters(2, on: limiter, admitted: admitted)
        // Queued before the fall, and still behind it: 4 running of limit 2 owe 2 back first.
        limiter.limit = 2
        limiter.limit = 1  // a second fall adds to what is owed
        #expect(limiter.running == 4)
        for released in 1...3 {
            limiter.release()
            #expect(limiter.waitingCount == 2, "\(released) given back of the 3 owed: nobody admitted")
            #expect(limiter.running == 4 - released)
        }
        limiter.release()  // 0 running of limit 1: the oldest waiter
        try await waiters[0].value
        #expect(admitted.events == [0])
        #expect(limiter.running == 1 && limiter.waitingCount == 1)
        // A rise of 2 pays the queued waiter and leaves one slot free.
        limiter.limit = 3
        try await waiters[1].value
        #expect(limiter.running == 2)
        #expect(limiter.tryAcquire())
        #expect(!limiter.tryAcquire())
    }

    @Test func aRiseAfterAFallPaysWhatIsOwedBeforeAdmittingWaiters() async throws {
        let limiter = ConcurrencyLimiter(limit: 3)
        for _ in 0..<3 { #expect(limiter.tryAcquire()) }
        let waiter = Task { try await limiter.acquire() }
        try await waitUntil("the waiter is queued") { limiter.waitingCount == 1 }
        limiter.limit = 1  // 3 running: 2 owed
        limiter.limit = 2  // 1 of the 2 owed is forgiven; the waiter still waits
        #expect(limiter.waitingCount == 1)
        #expect(limiter.running == 3)
        limiter.release()  // pays the last one owed
        #expect(limiter.waitingCount == 1)
        limiter.release()  // 1 running of limit 2: the waiter
        try await waiter.value
        #expect(limiter.running == 2 && limiter.waitingCount == 0)
    }

    /// Holders, waiters that are cancelled, and a task that moves the limit up and down, all
    /// at once: at the end every slot is back (the limit's worth are free, none more), nobody
    /// waits, and no admission ever went past the largest limit set.
    @Test(arguments: [0 as UInt64, 1, 2])
    func racingLimitsReleasesAndCancelsNeverLoseOrDuplicateASlot(seed: UInt64) async throws {
        let limiter = ConcurrencyLimiter(limit: 4)
        let probe = ConcurrencyProbe()
        let largest = 6
        let tasks = (0..<400).map { index in
            Task {
                for _ in 0..<20 {
                    do {
                        try await limiter.withPermit {
                            probe.enter()
                            await Task.yield()
                            probe.leave()
                        }
                    } catch {
                        #expect(error is CancellationError)
                        return
                    }
                }
            }
        }
        var generator = SplitMix64(seed: seed)
        for round in 0..<400 {
            limiter.limit = Int.random(in: 0...largest, using: &generator)
            if round % 4 == 0 { tasks[Int.random(in: 0..<tasks.count, using: &generator)].cancel() }
            await Task.yield()
        }
        limiter.limit = 3
        for task in tasks { await task.value }
        #expect(probe.maximum <= largest)
        #expect(limiter.running == 0)
        #expect(limiter.waitingCount == 0)
        for _ in 0..<3 { #expect(limiter.tryAcquire()) }
        #expect(!limiter.tryAcquire(), "no slot beyond the limit")
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
        let waiters = try await queuedWaiters(8, on: limiter, admitted: admitted)
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
        let waiters = try await queuedWaiters(6, on: limiter, admitted: admitted)
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
