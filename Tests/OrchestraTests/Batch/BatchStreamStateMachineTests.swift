import TestSupport
import Testing

@testable import Orchestra

/// The batch stream's pure state: its counting rule (an item is outstanding from its start
/// until the consumer receives it, and at most `capacity` are outstanding), the two delivery
/// orders, the worker and consumer hand-offs, the end, and termination.
@Suite("Batch stream state machine", .timeLimit(.minutes(1)), .takesTurns)
struct BatchStreamStateMachineTests: BatchMachineFixtures {

    @Test func workersTakeAtMostCapacityItemsBeforeOneIsConsumed() {
        var machine = Machine(order: .completion, capacity: 3)
        #expect(machine.isIdle)
        #expect(machine.started(idleTask()) == nil)
        #expect(!machine.isIdle)
        #expect((0..<3).map { _ in describe(machine.reserveSlot()) } == ["proceed", "proceed", "proceed"])
        #expect(describe(machine.reserveSlot()) == "suspend")
        // A finished item the consumer has not received still counts.
        #expect(machine.deliver(item(0)) == nil, "no consumer waits")
        #expect(describe(machine.reserveSlot()) == "suspend", "finished but not consumed: still outstanding")
        #expect(describe(machine.next()) == "deliver item 0 at 0")
        #expect(describe(machine.reserveSlot()) == "proceed", "consuming it freed one slot")
        #expect(describe(machine.reserveSlot()) == "suspend")
    }

    @Test func inCompletionOrderItemsAreDeliveredAsTheyFinish() {
        var machine = Machine(order: .completion, capacity: 4)
        _ = machine.started(idleTask())
        for _ in 0..<3 { _ = machine.reserveSlot() }
        _ = machine.deliver(item(2))
        _ = machine.deliver(item(0))
        #expect(describe(machine.next()) == "deliver item 2 at 2")
        #expect(describe(machine.next()) == "deliver item 0 at 0")
        #expect(describe(machine.next()) == "suspend", "item 1 still runs")
    }

    /// In input order, item i + capacity cannot start before item i was delivered, however
    /// many later items finished.
    @Test func inInputOrderALaterItemWaitsForTheEarlierOnesAndHoldsItsSlot() {
        var machine = Machine(order: .input, capacity: 2)
        _ = machine.started(idleTask())
        #expect(describe(machine.reserveSlot()) == "proceed")  // item 0
        #expect(describe(machine.reserveSlot()) == "proceed")  // item 1
        _ = machine.deliver(item(1))
        #expect(describe(machine.next()) == "suspend", "item 1 finished, but item 0 comes first")
        #expect(describe(machine.reserveSlot()) == "suspend", "item 2 cannot start before item 0 is delivered")
        _ = machine.deliver(item(0))
        #expect(describe(machine.next()) == "deliver item 0 at 0")
        #expect(describe(machine.reserveSlot()) == "proceed", "item 2 starts once item 0 was delivered")
        #expect(describe(machine.next()) == "deliver item 1 at 1")
        #expect(describe(machine.next()) == "suspend")
    }

    @Test func theStreamEndsOnlyOnceTheDriverFinishedAndEverythingWasConsumed() {
        var machine = Machine(order: .completion, capacity: 2)
        #expect(
            describe(machine.next()) == "suspend", "an idle stream has not ended: the workers have not even started")
        _ = machine.started(idleTask())
        _ = machine.reserveSlot()
        _ = machine.deliver(item(0))
        #expect(machine.workersFinished() == nil, "no consumer waits to be told")
        #expect(describe(machine.next()) == "deliver item 0 at 0", "what was delivered is still received")
        #expect(describe(machine.next()) == "end")
        #expect(describe(machine.next()) == "end")
    }

    @Test func aSecondStartIsRefused() {
        var machine = Machine(order: .completion, capacity: 1)
        let first = idleTask()
        let second = idleTask()
        #expect(machine.started(first) == nil)
        #expect(machine.started(second) == second, "the second task is handed back, to cancel")
        #expect(machine.terminate().task == first, "the first task is the one kept")
    }

    @Test func terminationStopsTheDriverAndDropsWhatWasNotConsumed() {
        var machine = Machine(order: .input, capacity: 3)
        let workers = idleTask()
        _ = machine.started(workers)
        _ = machine.reserveSlot()
        _ = machine.reserveSlot()
        _ = machine.deliver(item(0))
        let ended = machine.terminate()
        #expect(ended.task == workers, "the running workers' task is cancelled")
        #expect(ended.consumer == nil && ended.workers.isEmpty)
        #expect(describe(machine.reserveSlot()) == "stop")
        #expect(machine.deliver(item(1)) == nil)
        #expect(describe(machine.next()) == "end", "item 0 was dropped")
        #expect(machine.started(idleTask()) != nil, "a terminated stream never starts")
        #expect(machine.workersFinished() == nil)
    }

    @Test func aWorkerThatFindsTheBufferFullParksAndIsWokenByTheDeliveryThatFreesASlot() async {
        var machine = Machine(order: .completion, capacity: 1)
        _ = machine.started(idleTask())
        #expect(describe(machine.reserveSlot()) == "proceed")
        let woken = await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
            #expect(machine.suspendWorker(worker, isCancelled: false) == nil, "full: the worker parks")
            _ = machine.deliver(item(0))
            guard case .deliver(let received, let wake?) = machine.next() else {
                Issue.record("consuming the item should wake the parked worker")
                worker.resume(returning: false)
                return
            }
            #expect(received.index == 0)
            wake.resume(returning: true)
        }
        #expect(woken)
        #expect(describe(machine.reserveSlot()) == "suspend", "the woken worker holds the freed slot")
        #expect(machine.takeWorkerForFreedSlot() == nil, "nobody waits any more")
    }

    @Test func aWorkerParksOnlyWhenItMust() async {
        var machine = Machine(order: .completion, capacity: 1)
        _ = machine.started(idleTask())
        // Room: the worker proceeds without waiting, taking the slot.
        let roomy = await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
            let answer = machine.suspendWorker(worker, isCancelled: false)
            #expect(answer == true)
            worker.resume(returning: answer ?? false)
        }
        #expect(roomy)
        #expect(describe(machine.reserveSlot()) == "suspend")
        // Cancelled: the worker stops.
        let cancelled = await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
            let answer = machine.suspendWorker(worker, isCancelled: true)
            #expect(answer == false)
            worker.resume(returning: answer ?? true)
        }
        #expect(!cancelled)
    }

    @Test func aWaitingConsumerReceivesTheNextItemAsItIsDelivered() async {
        var machine = Machine(order: .completion, capacity: 2)
        _ = machine.started(idleTask())
        _ = machine.reserveSlot()
        let received = await withCheckedContinuation { (consumer: Machine.ConsumerContinuation) in
            let suspension = machine.suspendConsumer(consumer, isCancelled: false)
            #expect(describe(suspension.action) == "suspend")
            #expect(suspension.taskToCancel == nil)
            guard let handOff = machine.deliver(item(0)) else {
                Issue.record("the waiting consumer should receive the item")
                consumer.resume(returning: nil)
                return
            }
            handOff.consumer.resume(returning: handOff.item)
        }
        #expect(received?.index == 0)
        #expect(describe(machine.reserveSlot()) == "proceed")
        #expect(describe(machine.reserveSlot()) == "proceed", "the received item no longer counts")
    }

    @Test func aConsumerWaitingWhenTheDriverFinishesIsToldTheEnd() async {
        var machine = Machine(order: .input, capacity: 2)
        _ = machine.started(idleTask())
        let received = await withCheckedContinuation { (consumer: Machine.ConsumerContinuation) in
            _ = machine.suspendConsumer(consumer, isCancelled: false)
            guard let waiting = machine.workersFinished() else {
                Issue.record("the waiting consumer should be handed back")
                consumer.resume(returning: nil)
                return
            }
            waiting.resume(returning: nil)
        }
        #expect(received == nil)
        #expect(describe(machine.next()) == "end")
    }

    @Test func aCancelledConsumerTerminatesTheStream() async {
        var machine = Machine(order: .completion, capacity: 2)
        let workers = idleTask()
        _ = machine.started(workers)
        _ = machine.reserveSlot()
        _ = machine.deliver(item(0))
        let received = await withCheckedContinuation { (consumer: Machine.ConsumerContinuation) in
            let suspension = machine.suspendConsumer(consumer, isCancelled: true)
            #expect(
                describe(suspension.action) == "end",
                "a cancelled consumer receives nothing more, not even what is ready")
            #expect(suspension.taskToCancel == workers, "the workers' task is handed back to cancel")
            consumer.resume(returning: nil)
        }
        #expect(received == nil)
        #expect(describe(machine.reserveSlot()) == "stop")
    }

    @Test func theEndOfTheInputStopsEveryWorkerAndGivesBackTheSlot() async {
        var machine = Machine(order: .completion, capacity: 1)
        _ = machine.started(idleTask())
        #expect(describe(machine.reserveSlot()) == "proceed")
        let stopped = await withCheckedContinuation { (parked: Machine.WorkerContinuation) in
            #expect(machine.suspendWorker(parked, isCancelled: false) == nil, "full: it parks")
            // The item in flight was the last: consumed, the slot goes to the parked worker,
            // which finds the input exhausted and gives the slot back.
            _ = machine.deliver(item(0))
            guard case .deliver(_, let wake?) = machine.next() else {
                Issue.record("consuming should wake the parked worker")
                parked.resume(returning: false)
                return
            }
            #expect(machine.endOfInput().isEmpty, "no other worker parks")
            wake.resume(returning: false)
        }
        #expect(!stopped)
        #expect(describe(machine.reserveSlot()) == "stop", "no worker takes an item after the end")
        #expect(machine.workersFinished() == nil)
        #expect(describe(machine.next()) == "end")
    }

    /// Each slot the consumer frees wakes one parked worker, never two for one slot.
    @Test func eachFreedSlotWakesOneParkedWorker() async {
        var machine = Machine(order: .input, capacity: 2)
        _ = machine.started(idleTask())
        _ = machine.reserveSlot()
        _ = machine.reserveSlot()
        let woken = await withCheckedContinuation { (first: Machine.WorkerContinuation) in
            #expect(machine.suspendWorker(first, isCancelled: false) == nil)
            _ = machine.deliver(item(1))
            _ = machine.deliver(item(0))
            guard case .deliver(let received, let wake?) = machine.next() else {
                Issue.record("item 0 frees a slot for the parked worker")
                first.resume(returning: false)
                return
            }
            #expect(received.index == 0)
            guard case .deliver(let second, let none) = machine.next() else {
                Issue.record("item 1 is ready")
                wake.resume(returning: false)
                return
            }
            #expect(second.index == 1)
            #expect(none == nil, "no other worker is parked")
            wake.resume(returning: true)
        }
        #expect(woken)
        #expect(describe(machine.reserveSlot()) == "proceed", "one slot went to the woken worker, one is free")
        #expect(describe(machine.reserveSlot()) == "suspend")
    }

    /// One parked worker is on its way at a time; once it has taken its slot, the next one is
    /// woken at once if room is left (so slow items still start as soon as their slots free).
    @Test func oneWorkerIsWokenAtATimeAndTheArrivalWakesTheNext() async throws {
        let machine = Locked(Machine(order: .completion, capacity: 2))
        machine.withLock {
            _ = $0.started(idleTask())
            _ = $0.reserveSlot()
            _ = $0.reserveSlot()
        }
        // Two workers park (unstructured: each needs a continuation of its own, resumed below).
        let workers = (0..<2).map { _ in
            Task {
                await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
                    if let now = machine.withLock({ $0.suspendWorker(worker, isCancelled: false) }) {
                        worker.resume(returning: now)
                    }
                }
            }
        }
        try await waitUntil("both workers parked") { machine.withLock { $0.parkedCount } == 2 }
        let (woken, none) = machine.withLock { machine -> (Machine.WorkerContinuation?, Machine.WorkerContinuation?) in
            _ = machine.deliver(item(0))
            _ = machine.deliver(item(1))
            guard case .deliver(_, let woken) = machine.next(), case .deliver(_, let none) = machine.next() else {
                return (nil, nil)
            }
            return (woken, none)
        }
        #expect(woken != nil, "the first freed slot wakes a parked worker")
        #expect(none == nil, "a worker is already on its way: no second one for the second slot")
        // The woken worker takes its slot; room is left, so it wakes the other.
        let next = machine.withLock { $0.wokenWorkerArrived() }
        #expect(next != nil)
        #expect(machine.withLock { $0.wokenWorkerArrived() } == nil, "no room left and nobody parked")
        woken?.resume(returning: true)
        next?.resume(returning: true)
        for worker in workers { #expect(await worker.value, "each woken worker holds a reserved slot") }
        #expect(describe(machine.withLock { $0.reserveSlot() }) == "suspend", "both freed slots went to them")
    }
}
