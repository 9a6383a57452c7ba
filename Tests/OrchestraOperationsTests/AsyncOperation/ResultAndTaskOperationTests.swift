import Foundation
import Orchestra
@testable import OrchestraOperations
import OrchestraTestKit
import Testing

@Suite("ResultOperation and TaskOperation", .timeLimit(.minutes(1)))
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

    @Test(arguments: [
        (QualityOfService.userInteractive, Operation.QueuePriority.normal, TaskPriority.high),
        (.utility, .veryHigh, .utility),
        (.default, .veryHigh, .high),
        (.default, .low, .low),
        (.default, .normal, .medium),
    ])
    func taskPriorityFollowsQualityOfServiceThenQueuePriority(
        quality: QualityOfService, queuePriority: Operation.QueuePriority, expected: TaskPriority
    ) {
        let operation = TaskOperation { 0 }
        operation.qualityOfService = quality
        operation.queuePriority = queuePriority
        #expect(operation.taskPriority == expected)
    }
}
