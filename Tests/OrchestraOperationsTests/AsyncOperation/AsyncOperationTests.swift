import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraOperations

@Suite("AsyncOperation on OperationQueue", .timeLimit(.minutes(1)), .takesTurns)
struct AsyncOperationTests {
    @Test func dependentsStartOnlyAfterTheAsyncOperationSignalsFinished() async throws {
        let log = EventLog<String>()
        let download = ManualOperation("download", log: log)
        let parse = BlockOperation { log.append("parse") }
        parse.addDependency(download)
        let queue = OperationQueue()
        queue.enqueue([download, parse])

        try await waitUntil("download started") { download.isExecuting }
        // `start()` has long returned; a correct operation is still executing and holds `parse`.
        #expect(!download.isFinished)
        #expect(!parse.isFinished && !parse.isExecuting)
        download.complete()
        try await waitUntil("parse ran") { parse.isFinished }
        #expect(log.events == ["start download", "finish download", "parse"])
        try await waitUntilAllOperationsAreFinished(queue)
    }

    @Test func maxConcurrentOperationCountCountsAsyncOperationsUntilTheyFinish() async throws {
        let log = EventLog<String>()
        let operations = (0..<5).map { ManualOperation("op\($0)", log: log) }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        queue.enqueue(operations)
        var finished = 0
        while finished < operations.count {
            let expected = min(2, operations.count - finished)
            try await waitUntil("\(expected) executing") { operations.filter(\.isExecuting).count == expected }
            // Never more than two: the others have not started while two are executing.
            #expect(operations.filter(\.isExecuting).count == expected)
            #expect(log.events.filter { $0.hasPrefix("start") }.count == finished + expected)
            operations.first(where: \.isExecuting)!.complete()
            finished += 1
            let done = finished
            try await waitUntil("\(done) finished") { operations.filter(\.isFinished).count == done }
        }
        try await waitUntilAllOperationsAreFinished(queue)
    }

    @Test func cancelledBeforeStartItFinishesWithoutRunning() async throws {
        let log = EventLog<String>()
        let queued = ManualOperation("queued", log: log)
        queued.cancel()
        let dependent = BlockOperation { log.append("dependent") }
        dependent.addDependency(queued)
        let queue = OperationQueue()
        queue.enqueue([queued, dependent])
        try await waitUntilAllOperationsAreFinished(queue)
        #expect(queued.isFinished && !queued.isExecuting)
        #expect(log.events == ["dependent"])
        #expect(queued.error is CancellationError)
        #expect(OperationOutcome(of: queued).state.description == "cancelled")

        // Outside a queue too.
        let alone = ManualOperation("alone", log: log)
        alone.cancel()
        alone.start()
        #expect(alone.isFinished)
        #expect(!log.events.contains("start alone"))
    }

    @Test func cancelledWhileRunningItsHandlerRunsAndItFinishes() async throws {
        let log = EventLog<String>()
        let diagnostics = DiagnosticsRecorder()
        let completion = Locked<(@Sendable () -> Void)?>(nil)
        let request = AsyncBlockOperation { operation in
            log.append("started")
            // A legacy API whose callback comes late, after the cancellation.
            completion.withLock { $0 = { operation.finish() } }
        }
        request.diagnostics = diagnostics.handler
        request.onCancel { log.append("request cancelled") }
        let queue = OperationQueue()
        queue.addOperation(request)
        try await waitUntil("started") { request.isExecuting }
        request.cancel()
        #expect(request.isFinished)
        #expect(log.events == ["started", "request cancelled"])
        request.cancel()
        #expect(log.events == ["started", "request cancelled"], "the handler runs once")

        // The late callback is ignored, and reported as expected, not as a bug.
        completion.withLock { $0 }?()
        #expect(diagnostics.log.events.map(\.kind) == [.doubleFinish])
        #expect(diagnostics.log.events.first?.isExpected == true)
        try await waitUntilAllOperationsAreFinished(queue)
    }

    // 100 rounds per seed; alone they take a fraction of a second, but in the whole suite under
    // ThreadSanitizer on two cores the queue's threads are scarce: hence the longer limit.
    @Test(.timeLimit(.minutes(4)), arguments: 0..<3)
    func cancelRacingWithFinishEndsItExactlyOnce(seed: Int) async throws {
        for round in 0..<100 {
            let log = EventLog<String>()
            let diagnostics = DiagnosticsRecorder()
            let operation = ManualOperation("racer", log: log)
            operation.diagnostics = diagnostics.handler
            let ends = EventLog<Int>()
            operation.whenFinished { ends.append(round) }
            let dependent = BlockOperation { log.append("dependent") }
            dependent.addDependency(operation)
            let queue = OperationQueue()
            queue.enqueue([operation, dependent])
            try await waitUntil("started") { operation.isExecuting }
            let box = OperationBatch.OperationsBox([operation])
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                let racer = box.operations[0] as! ManualOperation
                if (index + seed + round) % 2 == 0 { racer.cancel() } else { racer.finish() }
            }
            // Polled rather than waitUntilAllOperationsAreFinished (a thread per round): 200
            // rounds of that took most of the minute under ThreadSanitizer on two cores.
            try await waitUntil("the racer and its dependent ended") { operation.isFinished && dependent.isFinished }
            #expect(ends.count == 1, "round \(round): finished \(ends.count) times")
            #expect(log.events.filter { $0 == "dependent" }.count == 1)
            // If cancel won, the explicit finish came second and was an expected echo.
            #expect(diagnostics.log.events.allSatisfy { $0.isExpected })
            #expect(diagnostics.log.count <= 1)
        }
    }

    @Test func finishedTwiceFromTwoThreadsTheSecondIsIgnoredAndReported() async throws {
        let diagnostics = DiagnosticsRecorder()
        let operation = ManualOperation("twice", log: EventLog())
        operation.diagnostics = diagnostics.handler
        let ends = EventLog<Int>()
        operation.whenFinished { ends.append(1) }
        operation.start()
        let box = OperationBatch.OperationsBox([operation])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in (box.operations[0] as! AsyncOperation).finish() }
        #expect(operation.isFinished)
        #expect(ends.count == 1)
        #expect(diagnostics.log.events.map(\.kind) == [.doubleFinish])
        #expect(diagnostics.log.events.first?.isExpected == false)
        #expect(diagnostics.log.events.first?.message.contains("\"twice\"") == true)
        operation.start()
        #expect(diagnostics.log.events.map(\.kind) == [.doubleFinish, .doubleStart])
    }

    @Test func anOperationThatNeverFinishesTimesOut() async throws {
        let clock = ManualClock()
        let log = EventLog<String>()
        let stuck = ManualOperation("stuck", log: log)
        stuck.timeout = .seconds(5)
        stuck.clock = clock
        let after = BlockOperation { log.append("after") }
        after.addDependency(stuck)
        let queue = OperationQueue()
        queue.enqueue([stuck, after])
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(4))
        #expect(!stuck.isFinished)
        _ = clock.advance(by: .seconds(1))
        try await waitUntil("timed out") { stuck.isFinished }
        let error = try #require(stuck.error as? TimeoutError)
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(5))
        #expect(stuck.isCancelled)
        try await waitUntilAllOperationsAreFinished(queue)
        #expect(log.events == ["start stuck", "after"])
        #expect(clock.pendingSleepers.isEmpty)
    }

    /// An operation whose work's handle is stored at the end of `execute()`, and whose
    /// `executionCancelled()` records whether it found it.
    final class HandleAtTheEnd: AsyncOperation, @unchecked Sendable {
        let handleStored = Locked(false)
        let stops = EventLog<Bool>()
        /// Runs inside `execute()`, before the handle is stored.
        let duringExecute: @Sendable (HandleAtTheEnd) -> Void

        init(duringExecute: @escaping @Sendable (HandleAtTheEnd) -> Void) {
            self.duringExecute = duringExecute
        }

        override func execute() {
            duringExecute(self)
            handleStored.withLock { $0 = true }
        }

        override func executionCancelled() {
            stops.append(handleStored.withLock { $0 })
            finish()
        }
    }

    @Test func aCancelThatComesWhileExecuteRunsStopsTheWorkOnceExecuteHasReturned() throws {
        // Another thread's cancel, arriving after `isExecuting` but before the handle is stored
        // (a TaskOperation's task was lost so, and its operation never finished).
        let operation = HandleAtTheEnd { $0.cancel() }
        operation.start()
        #expect(operation.stops.events == [true], "stopped once, with the handle in place")
        #expect(operation.isFinished && operation.isCancelled)
        #expect(operation.error is CancellationError)
    }

    @Test func aTimeoutThatFiresWhileExecuteRunsStopsTheWorkOnceExecuteHasReturned() async throws {
        let clock = ManualClock()
        // `execute()` holds its thread until the test has seen the timeout fire (at most 10 s).
        let gate = ThreadCounter()
        let operation = HandleAtTheEnd { _ in gate.wait(untilAtLeast: 1, seconds: 10) }
        operation.timeout = .seconds(5)
        operation.clock = clock
        Thread.detachNewThread { operation.start() }
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(5))
        try await waitUntil("timed out") { operation.isCancelled }
        #expect(operation.stops.events.isEmpty, "not stopped while execute() runs")
        gate.add()
        try await waitUntil("finished") { operation.isFinished }
        #expect(operation.stops.events == [true], "stopped once, with the handle in place")
        let error = try #require(operation.error as? TimeoutError)
        #expect(error.timeout == .seconds(5))
    }

    @Test func aFinishedOperationCancelsItsTimer() async throws {
        let clock = ManualClock()
        let quick = ManualOperation("quick", log: EventLog())
        quick.timeout = .seconds(5)
        quick.clock = clock
        quick.start()
        try await clock.waitForSleepers(1)
        quick.complete()
        try await waitUntil("the timer is gone") { clock.sleeperCount == 0 }
        #expect(quick.error == nil)
        #expect(OperationOutcome(of: quick).succeeded)
    }

    @Test func theQueueWaitGivesUpByItselfWhenAnOperationNeverFinishes() async throws {
        let log = EventLog<String>()
        let stuck = ManualOperation("stuck", log: log)
        let queue = OperationQueue()
        queue.enqueue([stuck])
        try await waitUntil("stuck started") { stuck.isExecuting }
        await #expect(throws: NeverHappened.self) {
            try await waitUntilAllOperationsAreFinished(queue, guard: .milliseconds(200))
        }
        stuck.complete()  // lets the abandoned waiting thread return
        try await waitUntilAllOperationsAreFinished(queue)
    }

    @Test func waitUntilFinishedReturnsOnceTheOperationFinished() async throws {
        let log = EventLog<String>()
        let download = ManualOperation("download", log: log)
        let queue = OperationQueue()
        queue.enqueue([download])
        try await waitUntil("download started") { download.isExecuting }
        let waiter = Task {
            try await download.waitUntilFinished()
            log.append("waited")
        }
        #expect(!log.events.contains("waited"), "still executing")
        download.complete()
        try await waitUntil("the wait returned") { log.events.contains("waited") }
        try await waiter.value
        #expect(log.events == ["start download", "finish download", "waited"])
        // Once finished, a wait returns at once.
        try await download.waitUntilFinished()
    }

    @Test func waitUntilFinishedReturnsForAnOperationCancelledBeforeItStarted() async throws {
        let log = EventLog<String>()
        let operation = ManualOperation("never started", log: log)
        operation.cancel()
        let queue = OperationQueue()
        queue.enqueue([operation])
        let waiter = Task { try await operation.waitUntilFinished() }
        try await waitUntil("the wait returned") { operation.isFinished }
        try await waiter.value
        #expect(log.events.isEmpty)
    }

    @Test func cancellingTheWaitingTaskEndsTheWaitButNotTheOperation() async throws {
        let log = EventLog<String>()
        let download = ManualOperation("download", log: log)
        let queue = OperationQueue()
        queue.enqueue([download])
        try await waitUntil("download started") { download.isExecuting }
        let waiter = Task {
            do {
                try await download.waitUntilFinished()
                log.append("returned")
            } catch is CancellationError {
                log.append("cancelled")
            }
        }
        waiter.cancel()
        try await waitUntil("the wait ended") { log.events.count == 2 }
        #expect(log.events.last == "cancelled")
        #expect(download.isExecuting && !download.isCancelled, "the operation goes on")
        download.complete()
        try await waitUntilAllOperationsAreFinished(queue)
    }
}
