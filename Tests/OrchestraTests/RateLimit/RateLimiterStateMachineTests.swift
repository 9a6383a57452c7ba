import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

/// The pure state behind `RateLimiter`: the cell rate arithmetic, the queue, the one driver,
/// rate changes and clamping, without tasks or clocks.
@Suite("RateLimiterStateMachine", .timeLimit(.minutes(1)), .takesTurns)
struct RateLimiterStateMachineTests {
    typealias Machine = RateLimiterStateMachine<Int, String>

    static func s(_ seconds: Double) -> Duration { .wholeNanoseconds(seconds) }

    /// `machine.tryAcquire(now:)`, callable inside `#expect` (which cannot call a mutating method).
    func grant(_ machine: inout Machine, _ now: Duration) -> Bool { machine.tryAcquire(now: now) }

    struct Schedule: Sendable, CustomTestStringConvertible {
        var rate: Rate
        var burst: Int
        /// When each of the callers, all arriving at zero, is granted a permit.
        var grants: [Duration]
        var testDescription: String { "\(rate), burst \(burst)" }
    }

    static let schedules: [Schedule] = [
        Schedule(rate: .perSecond(4), burst: 1, grants: [0, 0.25, 0.5, 0.75, 1].map(s)),
        Schedule(rate: .per(5, .seconds(10)), burst: 2, grants: [0, 0, 2, 4, 6].map(s)),
        Schedule(rate: .perMinute(30), burst: 3, grants: [0, 0, 0, 2, 4, 6].map(s)),
        Schedule(rate: .perHour(3_600), burst: 1, grants: [0, 1, 2].map(s)),
        Schedule(rate: .perSecond(1), burst: 4, grants: [0, 0, 0, 0, 1, 2].map(s)),
        Schedule(rate: .perSecond(3), burst: 1, grants: (0..<4).map { Rate.perSecond(3).spacing * $0 }),
    ]

    /// Callers 0..<n arrive at zero; the driver fires `lateness` after each deadline it asks
    /// for (exactly at it by default).
    static func run(_ machine: inout Machine, callers: Int, lateness: Duration = .zero) -> [Duration] {
        var granted: [Duration] = []
        var arm: Machine.Arm?
        for caller in 0..<callers {
            switch machine.admitOrReserve(now: .zero, isCancelled: false) {
            case .admitted: granted.append(.zero)
            case .cancelled: Issue.record("not cancelled")
            case .mustWait(let id):
                switch machine.suspend(id: id, waiter: caller, isCancelled: false, now: .zero) {
                case .resumeAdmitted: granted.append(.zero)
                case .resumeCancelled: Issue.record("not cancelled")
                case .suspended(let start):
                    if let start { arm = start }
                }
            }
        }
        guard let arm else { return granted }
        var deadline = arm.deadline
        while true {
            let now = deadline + lateness
            let (admitted, next) = machine.fire(generation: arm.generation, now: now)
            granted += admitted.map { _ in now }
            guard let next else { return granted }
            deadline = max(next, now)
        }
    }

    @Test(arguments: schedules)
    func grantsTheBurstAtOnceThenOneEverySpacing(_ schedule: Schedule) {
        var machine = Machine(rate: schedule.rate, burst: schedule.burst)
        #expect(Self.run(&machine, callers: schedule.grants.count) == schedule.grants)
        #expect(machine.waiterCount == 0 && machine.driverDeadline == nil, "the driver ends with the queue")
    }

    @Test func theBucketRefillsWhileIdleButNeverBeyondTheBurst() {
        var machine = Machine(rate: .perSecond(1), burst: 3)
        #expect((0..<4).map { _ in machine.tryAcquire(now: .zero) } == [true, true, true, false])
        #expect((0..<2).map { _ in machine.tryAcquire(now: .seconds(1)) } == [true, false])
        #expect(!machine.isIdle(now: .seconds(3)) && machine.isIdle(now: .seconds(4)))
        // A hundred idle seconds refill three permits, not a hundred.
        #expect((0..<4).map { _ in machine.tryAcquire(now: .seconds(104)) } == [true, true, true, false])
    }

    @Test func aCallerNeverOvertakesAWaiterEvenWhenAPermitIsDue() {
        var machine = Machine(rate: .perSecond(1), burst: 1)
        #expect(grant(&machine, .zero))
        guard case .mustWait(let id) = machine.admitOrReserve(now: .zero, isCancelled: false) else {
            Issue.record("the second caller waits")
            return
        }
        guard case .suspended(let arm?) = machine.suspend(id: id, waiter: 1, isCancelled: false, now: .zero) else {
            Issue.record("the first waiter arms the driver")
            return
        }
        #expect(arm.deadline == .seconds(1))
        // The permit is due at 1 s, but the driver has not fired yet: it belongs to the waiter.
        #expect(!grant(&machine, .seconds(2)))
        #expect(machine.admitOrReserve(now: .seconds(2), isCancelled: false) != .admitted)
        #expect(machine.fire(generation: arm.generation, now: .seconds(2)).admitted == [1])
    }

    @Test func aCancelledWaiterLeavesItsTimeToTheNextAndTheLastOneStopsTheDriver() throws {
        var machine = Machine(rate: .perSecond(1), burst: 1)
        #expect(grant(&machine, .zero))
        var ids: [UInt64] = []
        var arm: Machine.Arm?
        for waiter in 0..<3 {
            guard case .mustWait(let id) = machine.admitOrReserve(now: .zero, isCancelled: false) else { return }
            ids.append(id)
            if case .suspended(let start?) = machine.suspend(id: id, waiter: waiter, isCancelled: false, now: .zero) {
                arm = start
            }
        }
        let generation = try #require(arm).generation
        let attached = machine.attach("driver", generation: generation)
        #expect(attached)
        #expect(machine.cancel(id: ids[0]) == (0, nil))
        #expect(machine.cancel(id: ids[0]) == (nil, nil), "a waiter leaves once")
        // Waiter 1 is granted at 1 s, when waiter 0 would have been.
        #expect(machine.fire(generation: generation, now: .seconds(1)) == ([1], .seconds(2)))
        #expect(machine.cancel(id: ids[2]) == (2, "driver"), "the queue is empty: the driver is cancelled")
        #expect(machine.driverDeadline == nil)
        #expect(machine.fire(generation: generation, now: .seconds(2)) == ([], nil), "a stopped driver gets nothing")
        let lateAttached = machine.attach("late", generation: generation)
        #expect(!lateAttached, "a driver attached after it was stopped is cancelled")
    }

    @Test func aCancelledTaskTakesNothing() {
        var machine = Machine(rate: .perSecond(1), burst: 1)
        #expect(machine.admitOrReserve(now: .zero, isCancelled: true) == .cancelled)
        #expect(grant(&machine, .zero), "the permit is still free")
        guard case .mustWait(let id) = machine.admitOrReserve(now: .zero, isCancelled: false),
            case .resumeCancelled = machine.suspend(id: id, waiter: 0, isCancelled: true, now: .seconds(5))
        else {
            Issue.record("a task cancelled before it queues is refused")
            return
        }
        #expect(machine.waiterCount == 0 && machine.driverDeadline == nil)
        #expect(grant(&machine, .seconds(5)), "the cancelled task took no permit")
    }

    struct RateChange: Sendable, CustomTestStringConvertible {
        var from: Rate
        var burst: Int
        var taken: Int
        var to: Rate
        var at: Duration
        /// When the first waiter (queued before the change) is granted.
        var nextGrant: Duration
        /// Whether the running driver must be replaced by one that wakes earlier.
        var replacesDriver: Bool
        var testDescription: String { "\(from) → \(to) at \(at)" }
    }

    static let rateChanges: [RateChange] = [
        // One permit in use at 1/min is one permit in use at 2/s: due in 0.5 s, not 60.
        RateChange(
            from: .perMinute(1), burst: 1, taken: 1, to: .perSecond(2), at: .zero, nextGrant: s(0.5),
            replacesDriver: true),
        // Half of the spacing elapsed: half a permit is left to earn back, at the new rate.
        RateChange(
            from: .perSecond(1), burst: 1, taken: 1, to: .perMinute(1), at: s(0.5), nextGrant: s(30.5),
            replacesDriver: false),
        // With a burst of 3 fully used, 3 permits × 0.1 s, minus the tolerance of 2 × 0.1 s.
        RateChange(
            from: .perHour(1), burst: 3, taken: 3, to: .perSecond(10), at: .zero, nextGrant: s(0.1),
            replacesDriver: true),
        // The same rate written differently: nothing moves.
        RateChange(
            from: .perSecond(1), burst: 1, taken: 1, to: .perMinute(60), at: .zero, nextGrant: s(1),
            replacesDriver: false),
    ]

    @Test(arguments: rateChanges)
    func waitersObserveANewRateAtOnce(_ change: RateChange) throws {
        var machine = Machine(rate: change.from, burst: change.burst)
        for _ in 0..<change.taken { #expect(grant(&machine, .zero)) }
        guard case .mustWait(let id) = machine.admitOrReserve(now: .zero, isCancelled: false),
            case .suspended(let arm?) = machine.suspend(id: id, waiter: 7, isCancelled: false, now: .zero)
        else {
            Issue.record("the waiter queues and arms the driver")
            return
        }
        let attached = machine.attach("old", generation: arm.generation)
        #expect(attached)
        let actions = machine.setRate(change.to, now: change.at)
        #expect(actions.admitted.isEmpty)
        #expect(machine.nextGrant == change.nextGrant)
        #expect(machine.rate == change.to)
        if change.replacesDriver {
            #expect(actions.stop == "old" && actions.start?.deadline == change.nextGrant)
            #expect(machine.fire(generation: arm.generation, now: change.nextGrant) == ([], nil), "superseded")
            let start = try #require(actions.start)
            #expect(machine.fire(generation: start.generation, now: change.nextGrant) == ([7], nil))
        } else {
            #expect(actions.stop == nil && actions.start == nil, "the running driver wakes no later than needed")
            if arm.deadline < change.nextGrant {
                // It wakes early, grants nothing and sleeps again until the new time.
                #expect(machine.fire(generation: arm.generation, now: arm.deadline) == ([], change.nextGrant))
            }
            #expect(machine.fire(generation: arm.generation, now: change.nextGrant) == ([7], nil))
        }
    }

    @Test func aPauseHoldsEveryGrantUntilItEndsThenTheBurstIsFree() {
        var machine = Machine(rate: .perSecond(1), burst: 2)
        machine.pause(until: .seconds(30), now: .zero)
        machine.pause(until: .seconds(10), now: .zero)  // a shorter pause changes nothing
        #expect(!grant(&machine, .seconds(29)))
        #expect(!machine.isIdle(now: .seconds(29)))
        #expect((0..<3).map { _ in machine.tryAcquire(now: .seconds(30)) } == [true, true, false])
    }

    struct Extreme: Sendable, CustomTestStringConvertible {
        var rate: Rate
        var burst: Int
        var testDescription: String { "\(rate), burst \(burst)" }
    }

    static let extremes: [Extreme] = [
        Extreme(rate: .per(1, .seconds(Int64.max)), burst: .max),
        Extreme(rate: .per(1, .seconds(Int64.max)), burst: 1),
        Extreme(rate: .per(.max, .nanoseconds(1)), burst: .max),
        Extreme(rate: .perSecond(.max), burst: 2),
        Extreme(rate: .perHour(1), burst: .max),
    ]

    /// Without the clamps, `Duration` arithmetic traps on these (τ = spacing × (burst − 1)
    /// overflows 128 bits of attoseconds) and the test process crashes.
    @Test(arguments: extremes)
    func extremeRatesAndBurstsClampInsteadOfTrapping(_ extreme: Extreme) {
        var machine = Machine(rate: extreme.rate, burst: extreme.burst)
        #expect(machine.spacing <= Rate.maximumSpacing && machine.tolerance <= Machine.maximumTolerance)
        for _ in 0..<1_000 { _ = machine.tryAcquire(now: .zero) }
        _ = machine.tryAcquire(now: .seconds(Int64.max / 4))
        machine.pause(until: .seconds(Int64.max), now: .seconds(Int64.max / 4))
        _ = machine.setRate(.per(1, .seconds(Int64.max)), now: .seconds(Int64.max / 4))
        _ = machine.setRate(.per(.max, .nanoseconds(1)), now: .seconds(Int64.max / 4))
        _ = machine.setRate(extreme.rate, now: .seconds(Int64.max / 2))
        #expect(machine.nextGrant <= .seconds(Int64.max / 2) + Machine.maximumTolerance * 3)
    }

    @Test func ratesSpaceTheirPermitsAndDescribeThemselves() {
        #expect(Rate.perSecond(50).spacing == .milliseconds(20))
        #expect(Rate.perMinute(30).spacing == .seconds(2))
        #expect(Rate.perHour(5_000).spacing == .milliseconds(720))
        #expect(Rate.per(5, .seconds(10)).spacing == .seconds(2))
        #expect(Rate.per(1, .seconds(Int64.max)).spacing == Rate.maximumSpacing)
        #expect(Rate.per(.max, .nanoseconds(1)).spacing == .zero)
        #expect(
            [Rate.perSecond(50), .perMinute(30), .perHour(5_000), .per(5, .seconds(10))].map(\.description) == [
                "50/s", "30/min", "5000/h", "5 per 10.0 seconds",
            ])
    }

    @Test func aClockThatGoesBackIsReadAsStandingStill() {
        var machine = Machine(rate: .perSecond(1), burst: 1)
        #expect(grant(&machine, .seconds(10)))
        #expect(!grant(&machine, .seconds(1)), "not due before 11 s, whatever the clock says")
        #expect(grant(&machine, .seconds(11)))
    }
}
