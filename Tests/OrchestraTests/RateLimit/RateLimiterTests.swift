import OrchestraTestKit
import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

/// `RateLimiter` with real tasks on a `ManualClock`: permits at the exact instants, FIFO,
/// cancellation (a storm of it), rate changes while tasks wait, and nothing left on the clock.
@Suite("RateLimiter", .timeLimit(.minutes(1)), .takesTurns)
struct RateLimiterTests {
    struct Grant: Sendable, Equatable, CustomStringConvertible {
        var caller: Int
        var at: Duration
        var description: String { "#\(caller)@\(at)" }
    }

    /// Callers that take a permit each and log who was granted when.
    final class Callers: Sendable {
        let limiter: RateLimiter
        let clock: ManualClock
        let log = EventLog<Grant>()
        private let tasks = Locked<[Task<Void, any Error>]>([])

        init(_ limiter: RateLimiter, _ clock: ManualClock) {
            self.limiter = limiter
            self.clock = clock
        }

        var granted: [Grant] { log.events }
        var all: [Task<Void, any Error>] { tasks.withLock { $0 } }

        /// Starts `count` callers one after the other, each granted or queued before the next.
        func queue(_ count: Int) async throws {
            for _ in 0..<count {
                let caller = tasks.withLock { $0.count }
                let task = Task { [limiter, clock, log] in
                    try await limiter.acquire()
                    log.append(Grant(caller: caller, at: clock.now.offset))
                }
                tasks.withLock { $0.append(task) }
                try await waitUntil("caller \(caller) is granted or queued") {
                    self.log.count + self.limiter.waitingCount == caller + 1
                }
            }
        }

        /// Every caller granted so far has logged, and the driver sleeps (or nobody waits).
        func settle(_ what: String, cancelled: Int = 0) async throws {
            let total = tasks.withLock { $0.count }
            try await waitUntil(what) {
                self.log.count + self.limiter.waitingCount + cancelled == total
                    && (self.limiter.waitingCount == 0 ? self.clock.sleeperCount == 0 : self.clock.sleeperCount == 1)
            }
        }

        /// Advances to each deadline the driver sleeps until, until nobody waits.
        func drain() async throws {
            while limiter.waitingCount > 0 {
                try await clock.waitForSleepers(1)
                clock.advanceToNextDeadline()
                try await settle("the callers due at \(clock.now) are granted")
            }
        }
    }

    struct Schedule: Sendable, CustomTestStringConvertible {
        var rate: Rate
        var burst: Int
        var grants: [Duration]
        var testDescription: String { "\(rate), burst \(burst)" }
    }

    static func ms(_ milliseconds: Int) -> Duration { .milliseconds(milliseconds) }

    static let schedules: [Schedule] = [
        Schedule(rate: .perSecond(4), burst: 1, grants: [0, 250, 500, 750, 1_000].map(ms)),
        Schedule(rate: .per(5, .seconds(10)), burst: 2, grants: [0, 0, 2_000, 4_000, 6_000].map(ms)),
        Schedule(rate: .perMinute(30), burst: 3, grants: [0, 0, 0, 2_000, 4_000, 6_000].map(ms)),
        Schedule(rate: .perHour(5_000), burst: 1, grants: [0, 720, 1_440, 2_160].map(ms)),
        Schedule(
            rate: .perSecond(3), burst: 2, grants: [.zero, .zero] + (1...3).map { Rate.perSecond(3).spacing * $0 }),
    ]

    @Test(arguments: schedules)
    func grantsEachPermitAtItsExactInstantInArrivalOrder(_ schedule: Schedule) async throws {
        let clock = ManualClock()
        let callers = Callers(RateLimiter(rate: schedule.rate, burst: schedule.burst, clock: clock), clock)
        try await callers.queue(schedule.grants.count)
        #expect(callers.granted.count == schedule.burst, "the burst is granted at once")
        try await callers.drain()
        #expect(callers.granted.map(\.at) == schedule.grants)
        #expect(callers.granted.map(\.caller) == Array(schedule.grants.indices), "first in, first out")
        for task in callers.all { try await task.value }
        #expect(clock.pendingSleepers.isEmpty, "no driver is left asleep")
    }

    @Test func aCancelledWaiterDelaysNobodyAndTheLastOneStopsTheDriver() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: .perSecond(1), clock: clock)
        let callers = Callers(limiter, clock)
        try await callers.queue(4)  // #0 at once; #1, #2, #3 due at 1, 2, 3 s
        try await clock.waitForSleepers(1)
        callers.all[1].cancel()
        await #expect(throws: CancellationError.self) { try await callers.all[1].value }
        clock.advance(by: .seconds(1))
        try await callers.settle("#2 is granted in #1's place", cancelled: 1)
        #expect(callers.granted == [Grant(caller: 0, at: .zero), Grant(caller: 2, at: .seconds(1))])

        callers.all[3].cancel()
        await #expect(throws: CancellationError.self) { try await callers.all[3].value }
        try await waitUntil("the driver is cancelled with the queue empty") { clock.sleeperCount == 0 }
        #expect(limiter.waitingCount == 0)
        // The cancelled callers took nothing: the permit due at 2 s is free then, not before.
        #expect(!limiter.tryAcquire())
        clock.advance(by: .seconds(1))
        #expect(limiter.tryAcquire())
    }

    @Test func anAlreadyCancelledTaskThrowsAndTakesNothing() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: .perSecond(1), clock: clock)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await limiter.acquire()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(limiter.tryAcquire(), "the permit is still free")
        #expect(!limiter.tryAcquire())
    }

    /// Hundreds of waiters, cancelled at random points: some while the driver sleeps, some
    /// while it is waking to grant the head. Each elapsed second grants exactly one permit to
    /// someone (a slot lost leaves the count short, a slot doubled pushes it over).
    @Test(arguments: [1 as UInt64, 2, 3])
    func aCancellationStormNeitherLosesNorDoublesAPermit(seed: UInt64) async throws {
        var generator = SplitMix64(seed: seed)
        let clock = ManualClock()
        let burst = 5
        let callerCount = 400
        let seconds = 100
        let limiter = RateLimiter(rate: .perSecond(1), burst: burst, clock: clock)
        let granted = EventLog<Int>()
        let tasks = (0..<callerCount).map { caller in
            Task {
                try await limiter.acquire()
                granted.append(caller)
            }
        }
        try await waitUntil("seed \(seed): the burst is granted and the rest wait") {
            granted.count == burst && limiter.waitingCount == callerCount - burst
        }
        var cancelled = Set<Int>()
        for second in 1...seconds {
            try await clock.waitForSleepers(1)
            let cancelFirst = Int.random(in: 0...1, using: &generator)
            let cancelAfter = Int.random(in: 0...1, using: &generator)
            for _ in 0..<cancelFirst { cancelled.insert(cancelOne(of: tasks, except: cancelled, using: &generator)) }
            clock.advance(by: .seconds(1))
            // These race with the driver granting the head of the queue.
            for _ in 0..<cancelAfter { cancelled.insert(cancelOne(of: tasks, except: cancelled, using: &generator)) }
            try await waitUntil("seed \(seed): second \(second) grants one more permit") {
                granted.count >= burst + second && clock.sleeperCount == 1
            }
            #expect(granted.count == burst + second, "seed \(seed), second \(second)")
        }
        #expect(limiter.waitingCount > 0, "seed \(seed): waiters were left all along")
        for task in tasks { task.cancel() }
        var outcomes = (granted: 0, cancelled: 0)
        for task in tasks {
            do {
                try await task.value
                outcomes.granted += 1
            } catch is CancellationError {
                outcomes.cancelled += 1
            }
        }
        #expect(outcomes.granted == burst + seconds && granted.count == burst + seconds, "seed \(seed)")
        #expect(outcomes.granted + outcomes.cancelled == callerCount)
        #expect(Set(granted.events).count == granted.count, "seed \(seed): nobody is granted twice")
        try await waitUntil("seed \(seed): the driver stops") { clock.sleeperCount == 0 }
        #expect(limiter.waitingCount == 0)
    }

    private func cancelOne(
        of tasks: [Task<Void, any Error>], except cancelled: Set<Int>, using generator: inout SplitMix64
    ) -> Int {
        var caller: Int
        repeat { caller = Int.random(in: 0..<tasks.count, using: &generator) } while cancelled.contains(caller)
        tasks[caller].cancel()
        return caller
    }

    @Test func waitersObserveARateChangedWhileTheyWait() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: .perMinute(1), clock: clock)
        let callers = Callers(limiter, clock)
        try await callers.queue(4)  // #0 at once, the others due a minute apart
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers.map(\.offset) == [.seconds(60)])

        limiter.rate = .perSecond(2)  // the permit in use now costs 0.5 s
        try await waitUntil("one driver, for 0.5 s") { clock.pendingSleepers.map(\.offset) == [.milliseconds(500)] }
        clock.advanceToNextDeadline()
        try await callers.settle("#1 is granted at 0.5 s")
        clock.advanceToNextDeadline()
        try await callers.settle("#2 is granted at 1 s")

        limiter.setRate(.perMinute(1))  // slower again: #3 is due a minute after #2
        #expect(limiter.rate == .perMinute(1))
        try await callers.drain()
        #expect(
            callers.granted == [
                Grant(caller: 0, at: .zero), Grant(caller: 1, at: .milliseconds(500)),
                Grant(caller: 2, at: .seconds(1)), Grant(caller: 3, at: .seconds(61)),
            ])
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func tryAcquireTakesOnlyAFreePermitAndWithPermitRunsItsBody() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: .perSecond(10), burst: 2, clock: clock)
        #expect(limiter.burst == 2)
        #expect(try await limiter.withPermit { 42 } == 42)
        #expect(limiter.tryAcquire())
        #expect(!limiter.tryAcquire(), "the burst is used")
        clock.advance(by: .milliseconds(99))
        #expect(!limiter.tryAcquire())
        clock.advance(by: .milliseconds(1))
        #expect(limiter.tryAcquire(), "one permit every 100 ms")
        #expect(!limiter.tryAcquire())
        #expect(clock.sleeperCount == 0, "nothing sleeps while nobody waits")
    }

    @Test func aPauseHoldsWaitersUntilItEnds() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: .perSecond(10), burst: 3, clock: clock)
        let callers = Callers(limiter, clock)
        try await callers.queue(1)
        limiter.pause(for: .seconds(2))  // "Retry-After: 2"
        try await callers.queue(4)
        try await callers.drain()
        #expect(
            callers.granted.map(\.at) == [.zero, .seconds(2), .seconds(2), .seconds(2), .milliseconds(2_100)],
            "the burst refilled during the pause")
        limiter.pause(for: .seconds(Int64.max))  // clamped, no trap
        #expect(!limiter.tryAcquire())
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func invalidArgumentsAreProgrammerErrorsNamingTheValue() async {
        let zeroRate = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Rate.perSecond(0)
        }
        #expect(text(zeroRate).contains("Rate.perSecond(_:): count must be 1 or more, got 0"))
        let zeroInterval = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Rate.per(3, .zero)
        }
        #expect(text(zeroInterval).contains("Rate.per(_:_:): interval must be longer than zero, got 0.0 seconds"))
        let zeroBurst = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RateLimiter(rate: .perSecond(1), burst: 0)
        }
        #expect(text(zeroBurst).contains("RateLimiter(burst:): burst must be 1 or more, got 0"))
        let negativePause = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            RateLimiter(rate: .perSecond(1)).pause(for: .seconds(-1))
        }
        #expect(
            text(negativePause).contains("RateLimiter.pause(for:): duration must not be negative, got -1.0 seconds"))
    }

    private func text(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }
}
