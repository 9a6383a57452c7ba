import OrchestraTestKit
import Testing

@Suite("suspendUntilCancelled", .timeLimit(.minutes(1)))
struct SuspendUntilCancelledTests {
    @Test func itEndsOnlyWhenItsTaskIsCancelled() async throws {
        let log = EventLog<String>()
        let task = Task {
            log.append("suspended")
            do {
                try await suspendUntilCancelled()
            } catch {
                log.append(error is CancellationError ? "cancelled" : "other: \(error)")
                throw error
            }
        }
        try await waitUntil("the task is suspended") { log.events == ["suspended"] }
        for _ in 0..<100 { await Task.yield() }
        #expect(log.events == ["suspended"], "nothing but a cancellation ends it")
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(log.events == ["suspended", "cancelled"])
    }

    @Test func anAlreadyCancelledTaskThrowsAtOnce() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await suspendUntilCancelled()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
