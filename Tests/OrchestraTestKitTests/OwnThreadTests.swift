import Foundation
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `.ownThread`: a test's body, and what it awaits, run on a thread of the test's own, not on
/// the cooperative pool.
@Suite("Tests on a thread of their own", .timeLimit(.minutes(1)), .takesTurns)
struct OwnThreadTests {
    @Test(.ownThread) func aSynchronousBodyRunsOnTheTestsThread() {
        #expect(ThreadTaskExecutor.isOnAnExecutorThread(), "\(threadName() ?? "?")")
    }

    @Test(.ownThread) func anAsyncBodyAndItsChildTasksStayOnIt() async {
        #expect(ThreadTaskExecutor.isOnAnExecutorThread(), "\(threadName() ?? "?")")
        await Task.yield()
        #expect(ThreadTaskExecutor.isOnAnExecutorThread(), "\(threadName() ?? "?")")
        let onIt = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<3 { group.addTask { ThreadTaskExecutor.isOnAnExecutorThread() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(onIt == [true, true, true])
    }

    @Test func withoutItATestRunsOnThePool() {
        #expect(!ThreadTaskExecutor.isOnAnExecutorThread())
    }

    @Test func anExecutorOfTwoThreadsRunsTwoJobsAtOnceAndStopsBoth() async throws {
        let executor = ThreadTaskExecutor(name: "two", threads: 2)
        // Each job blocks its thread until the other has started: one thread would never get
        // the second (the wait gives up after 10 s and says so).
        let arrived = ThreadCounter()
        let met = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<2 {
                group.addTask(executorPreference: executor) {
                    arrived.add()
                    return ThreadTaskExecutor.isOnAnExecutorThread() && arrived.wait(untilAtLeast: 2, seconds: 10)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(met == [true, true])
        executor.stop(waiting: true)
        let value = await Task(executorPreference: executor) { 7 }.value
        #expect(value == 7)
    }

    @Test func aJobEnqueuedAfterTheThreadEndedStillRuns() async {
        let executor = ThreadTaskExecutor(name: "stopped")
        // Stopped with nothing queued, the thread ends; a later task still runs, elsewhere.
        executor.stop(waiting: true)
        let value = await Task(executorPreference: executor) { 42 }.value
        #expect(value == 42)
    }
}

/// The name of the thread this runs on (`Thread.current` is not for async code).
private func threadName() -> String? { Thread.current.name }

/// `.takesTurns`: at most `width` suites at once, the others served in the order they came.
@Suite("Suites taking turns", .timeLimit(.minutes(1)), .takesTurns)
struct SuiteTurnsTests {
    @Test func aWaiterBeyondTheWidthWaitsForATurnGivenBackAndWaitersAreServedInOrder() async throws {
        let turns = SuiteTurns(width: 2)
        await turns.wait()
        await turns.wait()
        let order = Locked<[Int]>([])
        let first = Task {
            await turns.wait()
            order.withLock { $0.append(1) }
        }
        try await waitUntil("the first waits") { turns.waiting == 1 }
        let second = Task {
            await turns.wait()
            order.withLock { $0.append(2) }
        }
        try await waitUntil("the second waits") { turns.waiting == 2 }
        #expect(order.withLock { $0 }.isEmpty)
        turns.signal()
        await first.value
        #expect(order.withLock { $0 } == [1])
        #expect(turns.waiting == 1)
        turns.signal()
        await second.value
        #expect(order.withLock { $0 } == [1, 2])
        // Both turns given back: two free, none waiting.
        turns.signal()
        turns.signal()
        await turns.wait()
        await turns.wait()
        #expect(turns.waiting == 0)
    }

    @Test func aSuiteInsideOneThatHasItsTurnRunsAtOnce() {
        // This suite has its turn (a test runs inside it).
        #expect(SuiteTurns.hasTurn)
    }
}
