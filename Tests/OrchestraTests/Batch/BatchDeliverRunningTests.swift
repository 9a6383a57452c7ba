import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

/// `completions(limit:whenCancelled: .deliverRunning)`: a cancelled consumer stops the batch
/// (nothing new starts, the running items are cancelled) and still receives the outcome of
/// every item that started, so it can count the rest without touching them.
@Suite("Batch: deliver the running items when cancelled", .timeLimit(.minutes(1)), .takesTurns)
struct BatchDeliverRunningTests: BatchMachineFixtures {

    // MARK: The state machine

    @Test func aStoppedStreamDeliversWhatIsReadyAndWhatWasRunningThenEnds() async {
        var machine = Machine(order: .completion, capacity: 3, deliversRunning: true)
        let workers = idleTask()
        _ = machine.started(workers)
        _ = machine.reserveSlot()
        _ = machine.reserveSlot()
        _ = machine.deliver(item(0))
        _ = await withCheckedContinuation { (consumer: Machine.ConsumerContinuation) in
            let suspension = machine.suspendConsumer(consumer, isCancelled: true)
            #expect(describe(suspension.action) == "deliver item 0 at 0", "what was ready is still received")
            #expect(suspension.taskToCancel == workers, "the running items are cancelled")
            consumer.resume(returning: nil)
        }
        guard case .stop = machine.reserveSlot() else {
            Issue.record("no item starts after a stop")
            return
        }
        #expect(machine.deliver(item(1)) == nil, "no consumer waits")
        #expect(describe(machine.next()) == "deliver item 1 at 1", "the running item's outcome is received")
        #expect(describe(machine.next()) == "suspend", "the stream ends only once the workers have")
        #expect(machine.workersFinished() == nil)
        #expect(describe(machine.next()) == "end")
    }

    @Test func stoppingReleasesTheParkedWorkersOnceAndCancelsTheTaskOnce() async {
        var machine = Machine(order: .completion, capacity: 1, deliversRunning: true)
        let workers = idleTask()
        _ = machine.started(workers)
        _ = machine.reserveSlot()
        let resumed = await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
            #expect(machine.suspendWorker(worker, isCancelled: false) == nil, "full: it parks")
            let stopped = machine.consumerCancelled()
            #expect(stopped.task == workers && stopped.consumer == nil && stopped.workers.count == 1)
            for parked in stopped.workers { parked.resume(returning: false) }
        }
        #expect(!resumed, "a parked worker stops")
        let again = machine.consumerCancelled()
        #expect(again.task == nil && again.workers.isEmpty, "stopping twice changes nothing")
        #expect(machine.takeWorkerForFreedSlot() == nil)
    }

    @Test func withoutDeliverRunningACancelledConsumerStillTerminatesTheStream() {
        var machine = Machine(order: .completion, capacity: 2)
        let workers = idleTask()
        _ = machine.started(workers)
        _ = machine.reserveSlot()
        _ = machine.deliver(item(0))
        #expect(machine.consumerCancelled().task == workers)
        #expect(describe(machine.next()) == "end", "what was ready is dropped")
    }

    /// The workers' task may end before `started(_:)` records it (an empty or stopped input):
    /// the stream still ends, rather than wait for an end that was already reported.
    @Test func workersThatEndBeforeTheirTaskIsRecordedEndTheStream() {
        var machine = Machine(order: .completion, capacity: 2, deliversRunning: true)
        _ = machine.stop()
        guard case .stop = machine.reserveSlot() else {
            Issue.record("a stream stopped before it started takes no item")
            return
        }
        #expect(machine.workersFinished() == nil, "no consumer waits yet")
        let task = idleTask()
        #expect(machine.started(task) == task, "already finished: handed back")
        #expect(describe(machine.next()) == "end")
    }

    // MARK: The stream

    /// Elements that wait on a gate until cancelled.
    final class Held: Sendable {
        let gate = AsyncGate(isOpen: false)
        let started = Locked(0)

        func run(_ index: Int) async throws -> Int {
            started.withLock { $0 += 1 }
            try await gate.pass()
            return index
        }
    }

    /// Five million elements, eight running: the cancelled loop receives the eight running
    /// ones' cancellations and ends; the others never start, and are counted, not visited.
    @Test func aCancelledLoopReceivesTheRunningElementsAndCountsTheRest() async throws {
        let held = Held()
        let total = 5_000_000
        let consumer = Task { () -> (received: Int, cancelled: Int) in
            var received = 0
            var cancelled = 0
            for await (_, result) in (0..<total).completions(
                limit: 8, whenCancelled: .deliverRunning, { try await held.run($0) })
            {
                received += 1
                if case .failure(is CancellationError) = result { cancelled += 1 }
            }
            return (received, cancelled)
        }
        try await waitUntil("eight running") { held.started.withLock { $0 } == 8 }
        consumer.cancel()
        let outcome = await consumer.value
        #expect(outcome.received == 8 && outcome.cancelled == 8)
        #expect(held.started.withLock { $0 } == 8, "nothing started after the cancellation")
        #expect(total - outcome.received == 4_999_992)
    }

    /// The loop does not end while an element that ignores cancellation runs: no element
    /// outlives it.
    @Test func theLoopWaitsForAnElementThatIgnoresCancellation() async throws {
        let gate = AsyncGate(isOpen: false)
        let started = Locked(0)
        let consumer = Task { () -> [Int] in
            var values: [Int] = []
            for await (_, result) in (0..<10).completions(
                limit: 2, whenCancelled: .deliverRunning,
                {
                    started.withLock { $0 += 1 }
                    // Ignores cancellation: ends when the gate opens, whatever happens.
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        Task {
                            // Unstructured: waits for the gate outside the cancelled element.
                            try? await gate.pass()
                            done.resume()
                        }
                    }
                    return $0
                })
            {
                if case .success(let value) = result { values.append(value) }
            }
            return values
        }
        try await waitUntil("two running") { started.withLock { $0 } == 2 }
        consumer.cancel()
        try await waitUntil("the gate has its two waiters") { gate.waitingCount == 2 }
        gate.open()
        #expect(await consumer.value.sorted() == [0, 1], "both were received, and nothing else started")
        #expect(started.withLock { $0 } == 2)
    }

    @Test func aLoopCancelledBeforeItStartsStartsNothing() async {
        let started = Locked(0)
        let consumer = Task { () -> Int in
            withUnsafeCurrentTask { $0?.cancel() }
            var received = 0
            for await _ in (0..<1_000).completions(
                limit: 4, whenCancelled: .deliverRunning, { _ in started.withLock { $0 += 1 } })
            {
                received += 1
            }
            return received
        }
        #expect(await consumer.value == 0)
        #expect(started.withLock { $0 } == 0)
    }

    /// Leaving the loop early still ends the stream at once and cancels the running elements.
    @Test func leavingTheLoopEarlyStillEndsAtOnce() async throws {
        let held = Held()
        let consumer = Task { () -> Int? in
            for await (index, _) in (0..<100).completions(
                limit: 3, whenCancelled: .deliverRunning,
                { index in
                    if index == 1 { return index }
                    return try await held.run(index)
                })
            {
                return index
            }
            return nil
        }
        #expect(await consumer.value == 1)
    }
}
