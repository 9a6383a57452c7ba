/// Sleeps until a deadline, many sleepers on one timer, and forgets a cancelled sleeper at
/// once.
///
/// Why it exists: a cancelled `Task.sleep` resumes its task at once, but the runtime keeps its
/// timer (a few hundred bytes) until the original deadline. A timeout that almost never
/// fires (30 s per request, requests that take milliseconds) then holds one such timer per
/// request of the last 30 s: at thousands of requests a second, hundreds of megabytes. Here a
/// cancelled sleeper leaves the queue when it is cancelled, and a single driver task sleeps
/// until the earliest deadline.
///
/// ``withTimeout(_:tolerance:clock:isolation:_:)`` and ``withDeadline(_:tolerance:clock:isolation:_:)``
/// use ``continuous`` for `ContinuousClock`; any other clock sleeps by its own `sleep`.
package final class SharedTimer<C: Clock>: Sendable where C.Duration == Duration {
    /// How a sleep ended without an error.
    package enum Wake: Sendable {
        /// The deadline passed.
        case deadline
        /// ``wake(_:)`` ended it first.
        case early
    }

    private typealias Continuation = CheckedContinuation<Wake, any Error>

    private let clock: C
    private let state = Locked(SharedTimerStateMachine<C.Instant, Continuation>())

    package init(clock: C) {
        self.clock = clock
    }

    /// Sleepers still waiting, and heap entries (live and stale), for tests.
    package var counts: (waiting: Int, entries: Int) {
        state.withLock { ($0.waiting, $0.entries) }
    }

    /// Suspends until `deadline` has passed on the clock.
    ///
    /// Cancellation: a cancelled task (already, or while it waits) leaves the queue and throws
    /// `CancellationError`; nothing of it stays behind.
    ///
    /// - Throws: `CancellationError`.
    package func sleep(until deadline: C.Instant) async throws {
        _ = try await sleep(until: deadline) { _ in }
    }

    /// Suspends until `deadline` has passed, or until ``wake(_:)`` is called with the id
    /// `onSuspend` was given.
    ///
    /// `onSuspend` runs once the sleeper is queued and before the task suspends, so a
    /// ``wake(_:)`` from the work it starts always finds the sleeper (or finds it already
    /// ended, and does nothing). It runs whatever the outcome, even for a task already
    /// cancelled or a deadline already passed.
    ///
    /// Cancellation: as ``sleep(until:)``.
    ///
    /// - Returns: Whether the deadline passed or ``wake(_:)`` came first.
    /// - Throws: `CancellationError`.
    package func sleep(until deadline: C.Instant, onSuspend: (_ id: UInt64) -> Void) async throws -> Wake {
        let id = state.withLock { $0.reserve() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Continuation) in
                // `Task.isCancelled` is read under the lock: the cancellation handler sets the
                // flag before it takes the lock, so either it finds this sleeper queued or this
                // section sees the flag.
                let action = state.withLock {
                    $0.suspend(
                        id: id, until: deadline, waiter: continuation, isCancelled: Task.isCancelled, now: clock.now)
                }
                onSuspend(id)
                switch action {
                case .resumeExpired: continuation.resume(returning: .deadline)
                case .resumeCancelled: continuation.resume(throwing: CancellationError())
                case .suspended(let arm): if let arm { start(arm) }
                }
            }
        } onCancel: {
            state.withLock { $0.withdraw(id: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Ends the sleep `id` at once, if it is still waiting: it returns ``Wake/early``.
    package func wake(_ id: UInt64) {
        state.withLock { $0.withdraw(id: id) }?.resume(returning: .early)
    }

    private func start(_ arm: SharedTimerStateMachine<C.Instant, Continuation>.Arm) {
        // Unstructured: the driver serves every sleeper of this timer, so it cannot be the
        // child of any one of them. It is never cancelled; one that an earlier deadline
        // superseded wakes at its own deadline and finds nothing to do.
        Task { [self] in
            try? await clock.sleep(until: arm.deadline, tolerance: nil)
            let (expired, next) = state.withLock { $0.fire(generation: arm.generation, now: clock.now) }
            if let next { start(next) }
            for continuation in expired { continuation.resume(returning: .deadline) }
        }
    }
}

extension SharedTimer where C == ContinuousClock {
    /// The timer for `ContinuousClock`, shared by the whole process.
    package static let continuous = SharedTimer(clock: ContinuousClock())
}

/// Sleeps until `deadline` on `clock`: on `ContinuousClock` through ``SharedTimer/continuous``
/// (which keeps nothing of a cancelled sleep), on any other clock by its own `sleep`.
///
/// - Throws: `CancellationError`.
package func sleepReleasingOnCancel<C: Clock>(
    until deadline: C.Instant, tolerance: Duration?, clock: C
) async throws where C.Duration == Duration {
    if clock is ContinuousClock, let deadline = deadline as? ContinuousClock.Instant {
        try await SharedTimer.continuous.sleep(until: deadline)
    } else {
        try await clock.sleep(until: deadline, tolerance: tolerance)
    }
}

/// Sleeps for `duration` on `clock`, like ``sleepReleasingOnCancel(until:tolerance:clock:)``.
///
/// - Throws: `CancellationError`.
package func sleepReleasingOnCancel<C: Clock>(for duration: Duration, clock: C) async throws
where C.Duration == Duration {
    try await sleepReleasingOnCancel(until: clock.now.advanced(by: duration), tolerance: nil, clock: clock)
}
