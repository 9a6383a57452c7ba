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

    /// A task suspended in ``sleep(until:onSuspend:)``, or an action ``schedule(at:_:)`` runs.
    private enum Sleeper: Sendable {
        case task(Continuation)
        case action(@Sendable () -> Void)

        /// Ends it at its deadline.
        func expire() {
            switch self {
            case .task(let continuation): continuation.resume(returning: .deadline)
            case .action(let action): action()
            }
        }
    }

    private let clock: C
    private let state = Locked(SharedTimerStateMachine<C.Instant, Sleeper>())

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
                        id: id, until: deadline, waiter: .task(continuation), isCancelled: Task.isCancelled,
                        now: clock.now)
                }
                onSuspend(id)
                switch action {
                case .resumeExpired: continuation.resume(returning: .deadline)
                case .resumeCancelled: continuation.resume(throwing: CancellationError())
                case .suspended(let arm): if let arm { start(arm) }
                }
            }
        } onCancel: {
            if case .task(let continuation)? = state.withLock({ $0.withdraw(id: id) }) {
                continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// Ends the sleep `id` at once, if it is still waiting: it returns ``Wake/early``.
    package func wake(_ id: UInt64) {
        if case .task(let continuation)? = state.withLock({ $0.withdraw(id: id) }) {
            continuation.resume(returning: .early)
        }
    }

    /// Calls `action` once `deadline` has passed, unless ``cancel(_:)`` comes first; no task
    /// waits for it. For a callback-based client that stops its own request when the time is
    /// up: the request runs in the caller's task, with no second task to race it.
    ///
    /// `action` runs on the timer's driver task, outside the timer's lock, or at once on the
    /// calling thread if `deadline` has already passed.
    ///
    /// - Returns: The id ``cancel(_:)`` takes.
    package func schedule(at deadline: C.Instant, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, outcome) = state.withLock {
            let id = $0.reserve()
            return (
                id, $0.suspend(id: id, until: deadline, waiter: .action(action), isCancelled: false, now: clock.now)
            )
        }
        switch outcome {
        case .resumeExpired, .resumeCancelled: action()
        case .suspended(let arm): if let arm { start(arm) }
        }
        return id
    }

    /// Forgets the action ``schedule(at:_:)`` returned `id` for, if it has not run: it never
    /// will. An action already running or run is not waited for.
    package func cancel(_ id: UInt64) {
        _ = state.withLock { $0.withdraw(id: id) }
    }

    private func start(_ arm: SharedTimerStateMachine<C.Instant, Sleeper>.Arm) {
        // Unstructured: the driver serves every sleeper of this timer, so it cannot be the
        // child of any one of them. It is never cancelled; one that an earlier deadline
        // superseded wakes at its own deadline and finds nothing to do.
        Task { [self] in
            try? await clock.sleep(until: arm.deadline, tolerance: nil)
            let (expired, next) = state.withLock { $0.fire(generation: arm.generation, now: clock.now) }
            if let next { start(next) }
            for sleeper in expired { sleeper.expire() }
        }
    }
}

extension SharedTimer where C == ContinuousClock {
    /// The timer for `ContinuousClock`, shared by the whole process.
    package static let continuous = SharedTimer(clock: ContinuousClock())

    /// ``schedule(at:_:)`` on ``continuous``. Compiled here for `ContinuousClock`: another
    /// module calling the generic method runs it unspecialised, looking its types up at run
    /// time on every call (a share of a small request's CPU: Benchmarks/History.md, the
    /// performance pass's fifth session).
    package static func schedule(
        at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void
    )
        -> UInt64
    {
        continuous.schedule(at: deadline, action)
    }

    /// ``cancel(_:)`` on ``continuous``, compiled for `ContinuousClock`.
    package static func cancel(_ id: UInt64) {
        continuous.cancel(id)
    }
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
