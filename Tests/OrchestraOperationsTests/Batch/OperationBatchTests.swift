import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraOperations

@Suite("Operation batches", .timeLimit(.minutes(1)), .takesTurns)
struct OperationBatchTests {
    @Test func oneCompletionReceivesEveryOutcomeInOrder() async throws {
        let log = EventLog<String>()
        let slow = ManualOperation("slow", log: log)
        let failing = AsyncBlockOperation { $0.finish(throwing: TestError("boom")) }
        let cancelled = BlockOperation {}
        cancelled.cancel()
        let plain = BlockOperation { log.append("plain") }
        plain.completionBlock = { log.append("plain's own completion") }
        let queue = OperationQueue()
        let delivered = EventLog<[OperationOutcome]>()
        let onMain = EventLog<Bool>()
        let target = DispatchQueue(label: "batch completion")
        let key = DispatchSpecificKey<Bool>()
        target.setSpecific(key: key, value: true)
        queue.addOperations([slow, failing, cancelled, plain], completionQueue: target) { outcomes in
            onMain.append(DispatchQueue.getSpecific(key: key) == true)
            delivered.append(outcomes)
        }
        try await waitUntil("the others finished") { failing.isFinished && plain.isFinished && cancelled.isFinished }
        #expect(delivered.count == 0, "not before every operation finished")
        slow.complete()
        try await waitUntil("delivered") { delivered.count == 1 }
        let outcomes = delivered.events[0]
        #expect(outcomes.map { $0.operation } == [slow, failing, cancelled, plain])
        #expect(
            outcomes.map(\.state.description) == [
                "succeeded", "failed: TestError(name: \"boom\")", "cancelled", "succeeded",
            ])
        #expect(onMain.events == [true])
        try await waitUntil("the chained block ran") { log.events.contains("plain's own completion") }
    }

    @Test func anEmptyBatchCompletesAtOnce() async throws {
        let outcomes = await OperationQueue().addOperationsAndWait([])
        #expect(outcomes.isEmpty)
    }

    @Test func awaitingABatchAndCancellingTheWaitCancelsItsOperations() async throws {
        let log = EventLog<String>()
        let operations = (0..<3).map { ManualOperation("op\($0)", log: log) }
        let queue = OperationQueue()
        let waiter = Task { await queue.addOperationsAndWait(operations) }
        try await waitUntil("all started") { operations.allSatisfy(\.isExecuting) }
        waiter.cancel()
        let outcomes = try await withHangGuard { await waiter.value }
        #expect(outcomes.map(\.state.description) == ["cancelled", "cancelled", "cancelled"])
    }
}
