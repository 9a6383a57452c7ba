import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraOperations

@Suite("ResultOperation and TaskOperation", .timeLimit(.minutes(1)), .takesTurns)
struct ResultAndTaskOperationTests {
    @Test func asyncCodeAwaitsAResultOperationsValue() async throws {
        let completion = Locked<(@Sendable (String) -> Void)?>(nil)
        let profile = ResultOperation<String> { operation in
            completion.withLock { $0 = { operation.finish(with: .success($0)) } }
        }
        let queue = OperationQueue()
        queue.addOperation(profile)
        async let value = profile.value
        try await waitUntil("started") { profile.isExecuting }
        completion.withLock { $0 }?("ada")
        #expect(try await value == "ada")
        #expect(try profile.result?.get() == "ada")
    }

    @Test func aFailedResultIsThrownToTheAwaitingCode() async throws {
        let failing = ResultOperation<Int> { $0.finish(with: .failure(TestError("offline"))) }
        failing.start()
        await #expect(throws: TestError("offline")) { try await failing.value }
        #expect(OperationOutcome(of: failing).state.description.contains("offline"))
    }

    @Test func aResultOperationCancelledBeforeStartHasACancellationResult() async throws {
        let never = ResultOperation<Int> { _ in Issue.record("ran after cancel") }
        never.cancel()
        let queue = OperationQueue()
        queue.addOperation(never)
        await #expect(throws: CancellationError.self) { try await never.value }
    }

    @Test func aTaskOperationRunsAsyncWorkAndFinishesWhenTheTaskEnds() async throws {
        let log = EventLog<String>()
        let first = TaskOperation { () async throws -> Int in
            log.append("first")
            return 1
        }
        let second = TaskOperation { () async throws -> Int in
            log.append("second")
            return 2
        }
        second.addDependency(first)
        let queue = OperationQueue()
        queue.enqueue([second, first])
        #expect(try await second.value == 2)
        #expect(try await first.value == 1)
        #expect(log.events == ["first", "second"])
    }

    @Test func cancellingATaskOperationCancelsItsTask() async throws {
        let gate = AsyncEvent()
        let sawCancellation = EventLog<Bool>()
        let long = TaskOperation { () async throws -> Int in
            await withTaskCancellationHandler {
                try? await gate.wait()
            } onCancel: {
                sawCancellation.append(true)
            }
            try Task.checkCancellation()
            return 0
        }
        let queue = OperationQueue()
        queue.addOperation(long)
        try await waitUntil("running") { long.isExecuting }
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
        #expect(sawCancellation.count == 1)
        #expect(long.isFinished)
        gate.signal()
    }

    @Test func aTaskThatIgnoresCancellationStillEndsAtItsTimeout() async throws {
        let clock = ManualClock()
        let gate = AsyncEvent()
        let stubborn = TaskOperation { () async throws -> Int in
            try? await gate.wait()
            return 0
        }
        stubborn.timeout = .seconds(2)
        stubborn.clock = clock
        let queue = OperationQueue()
        queue.addOperation(stubborn)
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(2))
        let error = await #expect(throws: TimeoutError.self) { try await stubborn.value }
        #expect(error?.code == .timedOut)
        gate.signal()
    }

    /// The task that runs the work reads its own priority: what the operation asked for is
    /// what it got. Expected: the quality of service's namesake priority (user-interactive,
    /// which tasks lack, is `.high`); at the default quality of service, the queue priority's
    /// (`.veryHigh` and `.high` are `.high`, `.normal` is `.medium`, `.veryLow` is `.background`).
    @Test(arguments: [
        (QualityOfService.userInteractive, Operation.QueuePriority.normal, TaskPriority.high),
        (.userInitiated, .veryLow, .userInitiated),
        (.utility, .veryHigh, .utility),
        (.background, .high, .background),
        (.default, .veryHigh, .high),
        (.default, .high, .high),
        (.default, .normal, .medium),
        (.default, .low, .low),
        (.default, .veryLow, .background),
    ])
    func theTaskRunsAtThePriorityOfTheQualityOfServiceThenOfTheQueuePriority(
        quality: QualityOfService, queuePriority: Operation.QueuePriority, expected: TaskPriority
    ) async throws {
        let operation = TaskOperation { Task.currentPriority }
        operation.qualityOfService = quality
        operation.queuePriority = queuePriority
        let queue = OperationQueue()
        queue.addOperation(operation)
        let observed = try await operation.value
        #expect(observed == expected, "\(quality.rawValue), \(queuePriority.rawValue): the task ran at \(observed)")
        #expect(operation.taskPriority == observed, "the priority the operation reports is the one its task ran at")
    }
}
