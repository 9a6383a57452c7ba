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
        let attempt = Self.stuckOperation(
            timer: { try? await fire.wait() }, givingUp: { gaveUp.withLock { $0 = true } }, until: stuck)
        fire.signal()
        await #expect(throws: TimeoutError.self) { try await attempt.value }
        #expect(gaveUp.withLock { $0 })
    }

    /// A try whose connection closed is given up at once, not at its timer: a query left on a
    /// closed connection may never answer. Told before the try waits, it is given up as it starts.
    @Test(arguments: [false, true])
    func anOperationWhoseConnectionClosedIsGivenUpAtOnce(abandonedBeforeItWaits: Bool) async throws {
        let abandonment = TryAbandonment()
        if abandonedBeforeItWaits { abandonment.abandon() }
        let started = AsyncEvent()
        let stuck = AsyncEvent()
        let gaveUp = Locked(false)
        defer { stuck.signal() }
        let attempt = Self.stuckOperation(
            timer: { try? await AsyncEvent().wait() }, givingUp: { gaveUp.withLock { $0 = true } },
            abandonment: abandonment, started: started, until: stuck)
        if !abandonedBeforeItWaits {
            try await started.wait()
            abandonment.abandon()
        }
        await #expect(throws: ConnectionClosedMidOperation.self) { try await withHangGuard { try await attempt.value } }
        #expect(gaveUp.withLock { $0 })
    }

    /// `abandoning` (10 s, its timer `timer`) of an operation that signals `started`, then never
    /// ends until `stuck` is signalled, and ignores cancellation, as a query on a connection the
    /// server dropped did.
    static func stuckOperation(
        timer: @escaping @Sendable () async -> Void, givingUp: @escaping @Sendable () -> Void,
        abandonment: TryAbandonment? = nil, started: AsyncEvent = AsyncEvent(), until stuck: AsyncEvent
    ) -> Task<Int, any Error> {
        Task {
            try await PostgresJobStore.abandoning(
                after: .seconds(10), timer: timer, givingUp: givingUp, abandonment: abandonment
            ) {
                started.signal()
                await Task.detached { try? await stuck.wait() }.value
                return 0
            }
        }
    }

    /// A caller cancelled while its operation runs is told at once, and the operation is
    /// cancelled too: a claim whose caller is gone must not go on to take jobs no worker runs.
    @Test func cancellingTheCallerCancelsTheOperation() async throws {
        let started = AsyncEvent()
        let operationCancelled = AsyncEvent()
        let attempt = Task {
            try await PostgresJobStore.abandoning(after: .seconds(10), timer: { try? await AsyncEvent().wait() }) {
                started.signal()
                // Ends only when cancelled, as a query does.
                await withTaskCancellationHandler {
                    try? await AsyncEvent().wait()
                } onCancel: {
                    operationCancelled.signal()
                }
                return 0
            }
        }
        try await started.wait()
        attempt.cancel()
        await #expect(throws: CancellationError.self) { try await attempt.value }
        try await withHangGuard { try await operationCancelled.wait() }
    }

    /// A caller cancelled before the call still runs the operation, whole: what a process
    /// records as it stops (outcomes, leases given back) is done from a cancelled task.
    @Test func aCallerCancelledBeforeTheCallRunsItWhole() async throws {
        let ran = Locked(false)
        let value = try await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            #expect(Task.isCancelled)
            return try await PostgresJobStore.abandoning(after: .seconds(10), timer: { try? await AsyncEvent().wait() })
            {
                // A query of its own: not cancelled with the caller.
                await Task.yield()
                ran.withLock { $0 = true }
                return Task.isCancelled ? -1 : 7
            }
        }.value
        #expect(value == 7)
        #expect(ran.withLock { $0 })
    }
}
