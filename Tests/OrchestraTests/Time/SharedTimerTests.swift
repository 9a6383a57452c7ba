import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

/// The timer behind `withTimeout` on `ContinuousClock`: deadlines in order, one driver, and a
/// cancelled sleeper forgotten at once (a cancelled `Task.sleep` keeps its timer until the
/// deadline, which made a long `for_each` with the default 30 s timeout grow by ~0.45 KB a
/// request).
@Suite("SharedTimer", .timeLimit(.minutes(1)), .takesTurns)
struct SharedTimerTests {
    typealias Machine = SharedTimerStateMachine<ManualClock.Instant, String>
    static let t0 = ManualClock.Instant(offset: .zero)
    static func at(_ seconds: Int) -> ManualClock.Instant { t0.advanced(by: .seconds(seconds)) }

    @Test func wakesSleepersInDeadlineOrderAndArmsOnlyForAnEarlierDeadline() {
        var machine = Machine()
        let a = machine.reserve()
        let b = machine.reserve()
        let c = machine.reserve()
        guard
            case .suspended(let first?) = machine.suspend(
                id: a, until: Self.at(5), waiter: "a", isCancelled: false, now: Self.t0)
        else {
            Issue.record("the first sleeper arms a driver")
            return
        }
        #expect(first.deadline == Self.at(5))
        guard
            case .suspended(nil) = machine.suspend(
                id: b, until: Self.at(9), waiter: "b", isCancelled: false, now: Self.t0)
        else {
            Issue.record("a later deadline needs no new driver")
            return
        }
        guard
            case .suspended(let earlier?) = machine.suspend(
                id: c, until: Self.at(2), waiter: "c", isCancelled: false, now: Self.t0)
        else {
            Issue.record("an earlier deadline arms a new driver")
            return
        }
        #expect(earlier.deadline == Self.at(2) && earlier.generation != first.generation)

        // The superseded driver wakes at its own deadline and finds nothing to do.
        let stale = machine.fire(generation: first.generation, now: Self.at(5))
        #expect(stale.expired.isEmpty && stale.arm == nil)
        let second = machine.fire(generation: earlier.generation, now: Self.at(2))
        #expect(second.expired == ["c"] && second.arm?.deadline == Self.at(5))
        let third = machine.fire(generation: second.arm!.generation, now: Self.at(6))
        #expect(third.expired == ["a"] && third.arm?.deadline == Self.at(9))
        let last = machine.fire(generation: third.arm!.generation, now: Self.at(9))
        #expect(last.expired == ["b"] && last.arm == nil)
        #expect(machine.waiting == 0 && machine.entries == 0)
    }

    @Test func aPassedDeadlineOrACancelledTaskResumesAtOnce() {
        var machine = Machine()
        let id = machine.reserve()
        guard
            case .resumeExpired = machine.suspend(
                id: id, until: Self.at(1), waiter: "x", isCancelled: false, now: Self.at(1))
        else {
            Issue.record("a deadline that has come does not wait")
            return
        }
        guard
            case .resumeCancelled = machine.suspend(
                id: id, until: Self.at(9), waiter: "x", isCancelled: true, now: Self.t0)
        else {
            Issue.record("a cancelled task does not wait")
            return
        }
        #expect(machine.waiting == 0 && machine.entries == 0)
    }

    @Test func cancelledSleepersDoNotAccumulate() {
        var machine = Machine()
        let live = machine.reserve()
        _ = machine.suspend(id: live, until: Self.at(100_000), waiter: "live", isCancelled: false, now: Self.t0)
        for second in 1...20_000 {
            let id = machine.reserve()
            _ = machine.suspend(id: id, until: Self.at(30 + second), waiter: "short", isCancelled: false, now: Self.t0)
            #expect(machine.withdraw(id: id) == "short")
            #expect(machine.entries <= 2 * machine.waiting + 64)
        }
        #expect(machine.waiting == 1)
        #expect(
            machine.withdraw(id: live) == "live" && machine.withdraw(id: live) == nil, "a waiter is handed out once")
    }

    @Test func aStaleTopIsSkippedAndTheDriverArmsForTheNextLiveDeadline() {
        var machine = Machine()
        let a = machine.reserve()
        let b = machine.reserve()
        guard
            case .suspended(let arm?) = machine.suspend(
                id: a, until: Self.at(1), waiter: "a", isCancelled: false, now: Self.t0)
        else {
            Issue.record("armed")
            return
        }
        _ = machine.suspend(id: b, until: Self.at(8), waiter: "b", isCancelled: false, now: Self.t0)
        _ = machine.withdraw(id: a)
        let fired = machine.fire(generation: arm.generation, now: Self.at(1))
        #expect(fired.expired.isEmpty && fired.arm?.deadline == Self.at(8))
    }

    @Test func sleepersOnAManualClockWakeAtTheirDeadlinesAndACancelledOneLeavesNothing() async throws {
        let clock = ManualClock()
        let timer = SharedTimer(clock: clock)
        let late = Task { try await timer.sleep(until: clock.now.advanced(by: .seconds(2))) }
        try await clock.waitForSleepers(1)  // a driver for t+2
        let early = Task { try await timer.sleep(until: clock.now.advanced(by: .seconds(1))) }
        try await clock.waitForSleepers(2)  // and one for t+1, which supersedes it
        let cancelled = Task { try await timer.sleep(until: clock.now.advanced(by: .seconds(30))) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(timer.counts.waiting == 2)

        clock.advance(by: .seconds(1))
        try await early.value
        // The driver for t+1 armed a new one for t+2, beside the superseded one.
        try await clock.waitForSleepers(2)
        #expect(timer.counts.waiting == 1)
        clock.advance(by: .seconds(1))
        try await late.value
        #expect(timer.counts.waiting == 0 && timer.counts.entries == 0)
    }

    @Test func withTimeoutOnTheContinuousClockLeavesNoTimerBehind() async throws {
        // 1,000 calls: many times the heap's rebuild threshold, and quick under ThreadSanitizer.
        for index in 0..<1_000 {
            let value = try await withTimeout(.seconds(30)) { index }
            #expect(value == index)
        }
        // Other tests may be waiting on the shared timer now; the bound holds whatever they do.
        let counts = SharedTimer.continuous.counts
        #expect(counts.entries <= 2 * counts.waiting + 64, "\(counts)")
    }

    @Test func aDeadlineThatHasPassedOnTheContinuousClockReturnsAtOnce() async throws {
        try await SharedTimer.continuous.sleep(until: .now.advanced(by: .seconds(-1)))
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await SharedTimer.continuous.sleep(until: .now.advanced(by: .seconds(3_600)))
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }

    @Test func aSleeperWokenByTheWorkItStartedEndsEarlyAndLeavesNothing() async throws {
        let clock = ManualClock()
        let timer = SharedTimer(clock: clock)
        // The work ends at once, from another task: the sleeper is queued before it starts.
        let wake = try await timer.sleep(until: clock.now.advanced(by: .seconds(10))) { id in
            Task { timer.wake(id) }
        }
        #expect(wake == .early)
        #expect(timer.counts.waiting == 0)
        // A deadline that passes first: the sleep says so, and a late wake changes nothing.
        let late = Task {
            try await timer.sleep(until: clock.now.advanced(by: .seconds(1))) { _ in }
        }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        #expect(try await late.value == .deadline)
        timer.wake(1)
        timer.wake(2)
        #expect(timer.counts.waiting == 0)
    }

    /// `schedule(at:_:)`, which times a callback-based client's request with no task waiting:
    /// an action runs once its deadline has passed, a cancelled one never runs, and neither
    /// leaves anything in the timer.
    @Test func aScheduledActionRunsAtItsDeadlineAndACancelledOneNever() async throws {
        let clock = ManualClock()
        let timer = SharedTimer(clock: clock)
        let ran = Locked<[String]>([])
        let (fired, firedContinuation) = AsyncStream.makeStream(of: Void.self)
        _ = timer.schedule(at: clock.now.advanced(by: .seconds(2))) {
            ran.withLock { $0.append("late") }
            firedContinuation.yield()
        }
        let cancelled = timer.schedule(at: clock.now.advanced(by: .seconds(1))) {
            ran.withLock { $0.append("cancelled") }
        }
        try await clock.waitForSleepers(2)  // drivers for t+2 and, superseding it, t+1
        timer.cancel(cancelled)
        #expect(timer.counts.waiting == 1)
        clock.advance(by: .seconds(1))
        // The driver for t+1 finds nothing due and arms one for t+2, beside the superseded one.
        try await clock.waitForSleepers(2)
        #expect(ran.withLock { $0 }.isEmpty, "nothing is due at t+1")
        clock.advance(by: .seconds(1))
        var events = fired.makeAsyncIterator()
        _ = await events.next()
        #expect(ran.withLock { $0 } == ["late"])
        #expect(timer.counts.waiting == 0)
        timer.cancel(cancelled)  // an id no longer there changes nothing
    }

    @Test func anActionWhoseDeadlineHasPassedRunsAtOnce() {
        let clock = ManualClock()
        let timer = SharedTimer(clock: clock)
        let ran = Locked(0)
        _ = timer.schedule(at: clock.now) { ran.withLock { $0 += 1 } }
        #expect(ran.withLock { $0 } == 1)
        #expect(timer.counts.waiting == 0 && timer.counts.entries == 0)
    }
}
