import TestSupport
import Testing

@testable import Orchestra

/// The semaphore's slow half, driven directly: a signal serves the oldest queued waiter or
/// leaves a hand-over for one on its way; a cancelled waiter leaves only if it can withdraw its
/// place in the count (no signal on its way to it), and otherwise stays to be served.
@Suite("SemaphoreWaiters", .timeLimit(.minutes(1)), .takesTurns)
struct SemaphoreWaitersTests {
    @Test func signalsServeQueuedWaitersOldestFirst() {
        var waiters = SemaphoreWaiters<String>()
        for name in ["a", "b"] {
            let id = waiters.makeID()
            #expect(waiters.arrive(id: id, waiter: name, isCancelled: false, withdraw: { true }) == .queued)
        }
        #expect(waiters.count == 2)
        #expect(waiters.signal() == "a")
        #expect(waiters.signal() == "b")
        #expect(waiters.count == 0 && waiters.handOvers == 0)
    }

    @Test func aDebtIsPaidBeforeAnyWaiterAndLeavesNoHandOver() {
        var waiters = SemaphoreWaiters<String>()
        _ = waiters.arrive(id: waiters.makeID(), waiter: "a", isCancelled: false, withdraw: { true })
        waiters.owe(2)
        #expect(waiters.signal() == nil)
        #expect(waiters.signal() == nil)
        #expect(waiters.debt == 0 && waiters.handOvers == 0 && waiters.count == 1)
        #expect(waiters.signal() == "a")
    }

    @Test func aSignalWithNoQueuedWaiterLeavesAHandOverForTheNextArrival() {
        var waiters = SemaphoreWaiters<String>()
        #expect(waiters.signal() == nil)
        #expect(waiters.handOvers == 1)
        // Even a cancelled arrival takes it: the signal counted it as served.
        var withdrawn = false
        let arrival = waiters.arrive(
            id: waiters.makeID(), waiter: "late", isCancelled: true,
            withdraw: {
                withdrawn = true
                return true
            })
        #expect(arrival == .admitted)
        #expect(!withdrawn && waiters.handOvers == 0 && waiters.count == 0)
    }

    @Test func aCancelledArrivalWithdrawsOrQueuesForTheSignalOnItsWay() {
        var waiters = SemaphoreWaiters<String>()
        #expect(waiters.arrive(id: waiters.makeID(), waiter: "a", isCancelled: true, withdraw: { true }) == .cancelled)
        #expect(waiters.count == 0)
        // The count says a signal already claimed it: it queues and that signal admits it.
        #expect(waiters.arrive(id: waiters.makeID(), waiter: "b", isCancelled: true, withdraw: { false }) == .queued)
        #expect(waiters.signal() == "b")
    }

    @Test func aCancelledQueuedWaiterLeavesOnlyIfItCanWithdraw() {
        var waiters = SemaphoreWaiters<String>()
        let a = waiters.makeID()
        let b = waiters.makeID()
        _ = waiters.arrive(id: a, waiter: "a", isCancelled: false, withdraw: { true })
        _ = waiters.arrive(id: b, waiter: "b", isCancelled: false, withdraw: { true })
        // A signal is on its way (the count is no longer negative): "a" stays and is served.
        #expect(waiters.cancel(id: a, withdraw: { false }) == nil)
        #expect(waiters.count == 2)
        #expect(waiters.cancel(id: b, withdraw: { true }) == "b")
        #expect(waiters.count == 1)
        // Gone already: nothing to withdraw, and the count is not touched.
        var asked = false
        #expect(
            waiters.cancel(
                id: b,
                withdraw: {
                    asked = true
                    return true
                }) == nil)
        #expect(!asked)
        #expect(waiters.signal() == "a")
    }
}
