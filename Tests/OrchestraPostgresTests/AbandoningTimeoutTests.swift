import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraPostgres

/// The store's time limit on each operation (`PostgresJobStore.abandoning`): a query that never
/// answers is given up at its timer; one that answers stops its timer. No server, no real time:
/// the timer is injected.
@Suite("PostgresJobStore: an operation's time limit", .timeLimit(.minutes(1)), .takesTurns)
struct AbandoningTimeoutTests {
    @Test func anOperationThatEndsInTimeStopsItsTimer() async throws {
        let timerEnded = Locked(false)
        let never = AsyncEvent()
        let value = try await PostgresJobStore.abandoning(
            after: .seconds(10),
            timer: {
                // Ends only when its task is cancelled.
                try? await never.wait()
                timerEnded.withLock { $0 = true }
            },
            { 42 })
        #expect(value == 42)
        // Each of a worker's thousand operations a second left a task asleep for 10 s.
        try await waitUntil("the timer stopped") { timerEnded.withLock { $0 } }
    }

    @Test func anOperationThatNeverEndsIsGivenUpWhenItsTimerFires() async throws {
        let fire = AsyncEvent()
        let stuck = AsyncEvent()
        let gaveUp = Locked(false)
        defer { stuck.signal() }
        let attempt = Task {
            try await PostgresJobStore.abandoning(
                after: .seconds(10), timer: { try? await fire.wait() }, givingUp: { gaveUp.withLock { $0 = true } },
                {
                    // Ignores cancellation, as a query on a connection the server dropped did.
                    await Task.detached { try? await stuck.wait() }.value
                    return 0
                })
        }
        fire.signal()
        await #expect(throws: TimeoutError.self) { try await attempt.value }
        #expect(gaveUp.withLock { $0 })
    }
}
