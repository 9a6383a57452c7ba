/// Runs `body`, cancelling it if it has not finished within `timeout`.
///
/// ```swift
/// let avatar = try await withTimeout(.seconds(5)) { try await fetchAvatar() }
/// ```
///
/// `body` runs in a child task. When the time is up it is cancelled and awaited: a body that
/// ignores cancellation delays the return until it ends. If the body still returns a value
/// (it finished at the same instant as the deadline), that value is returned: a result that
/// is already there is never thrown away.
///
/// Cancellation: cancelling the calling task cancels `body` and the timer; the call then
/// throws `CancellationError` (or the error `body` threw first).
///
/// Memory: on `ContinuousClock` the timers of all calls share one driver task, and a body
/// that ends before its deadline leaves nothing behind (a cancelled `Task.sleep` would keep
/// its timer until the deadline): thousands of short calls a second with a long timeout use
/// memory for the calls in progress only.
///
/// - Parameters:
///   - timeout: How long `body` may run.
///   - tolerance: Passed to the clock's `sleep` (not used on `ContinuousClock`, whose shared
///     timer wakes at the deadline).
///   - clock: The clock that measures the time; `ContinuousClock` by default, a manual clock
///     in tests.
///   - isolation: Where the call awaits and returns; the caller's actor by default. `body`
///     itself runs in a child task.
///   - body: The work.
/// - Throws: ``TimeoutError`` (code ``TimeoutError/Code/timedOut``, naming `timeout`) if the
///   time ran out first; otherwise whatever `body` throws.
public func withTimeout<Value: Sendable, C: Clock>(
    _ timeout: Duration,
    tolerance: Duration? = nil,
    clock: C = ContinuousClock(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: @escaping @Sendable () async throws -> Value
) async throws -> Value where C.Duration == Duration {
    try await race(
        body,
        against: clock.now.advanced(by: timeout),
        tolerance: tolerance,
        clock: clock,
        error: TimeoutError(timeout: timeout)
    )
}

/// Runs `body`, cancelling it if it has not finished by `deadline`.
///
/// The same as ``withTimeout(_:tolerance:clock:isolation:_:)`` with an absolute instant;
/// useful when several steps share one deadline (a batch that must end by a given time).
///
/// - Throws: ``TimeoutError`` if the deadline passed first; otherwise whatever `body` throws.
public func withDeadline<Value: Sendable, C: Clock>(
    _ deadline: C.Instant,
    tolerance: Duration? = nil,
    clock: C = ContinuousClock(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: @escaping @Sendable () async throws -> Value
) async throws -> Value where C.Duration == Duration {
    try await race(body, against: deadline, tolerance: tolerance, clock: clock, error: TimeoutError(timeout: nil))
}

private enum RaceOutcome<Value: Sendable>: Sendable {
    case finished(Value)
    case deadlinePassed
}

private func race<Value: Sendable, C: Clock>(
    _ body: @escaping @Sendable () async throws -> Value,
    against deadline: C.Instant,
    tolerance: Duration?,
    clock: C,
    error: TimeoutError,
    isolation: isolated (any Actor)? = #isolation
) async throws -> Value where C.Duration == Duration {
    if clock is ContinuousClock, let deadline = deadline as? ContinuousClock.Instant {
        return try await raceOnSharedTimer(body, against: deadline, error: error)
    }
    return try await withThrowingTaskGroup(of: RaceOutcome<Value>.self, isolation: isolation) { group in
        group.addTask { .finished(try await body()) }
        group.addTask {
            // Not `clock.sleep`: on ContinuousClock, a cancelled sleep would keep its timer
            // until the deadline, and a timeout is cancelled far more often than it fires.
            try await sleepReleasingOnCancel(until: deadline, tolerance: tolerance, clock: clock)
            return .deadlinePassed
        }
        // Leaving the closure by a throw cancels and awaits the other child.
        switch try await group.next()! {
        case .finished(let value):
            group.cancelAll()
            return value
        case .deadlinePassed:
            group.cancelAll()
            if case .success(.finished(let value))? = await group.nextResult() {
                return value
            }
            throw error
        }
    }
}

/// ``race(_:against:tolerance:clock:error:isolation:)`` on `ContinuousClock`, with one child
/// task instead of two: the caller sleeps on ``SharedTimer/continuous`` while `body` runs, and
/// `body`'s child wakes it as it ends. Per call this saves a task, its cancellation and a
/// cancellation handler, which matters on a path every timed request takes.
private func raceOnSharedTimer<Value: Sendable>(
    _ body: @escaping @Sendable () async throws -> Value,
    against deadline: ContinuousClock.Instant,
    error: TimeoutError,
    isolation: isolated (any Actor)? = #isolation
) async throws -> Value {
    let timer = SharedTimer.continuous
    return try await withThrowingTaskGroup(of: Value.self, isolation: isolation) { group in
        let wake: SharedTimer<ContinuousClock>.Wake
        do {
            wake = try await timer.sleep(until: deadline) { id in
                group.addTask {
                    defer { timer.wake(id) }
                    return try await body()
                }
            }
        } catch {
            // The caller was cancelled, and `body` with it: its own error if it threw one.
            if case .failure(let error)? = await group.nextResult(), !(error is CancellationError) { throw error }
            throw CancellationError()
        }
        if case .deadline = wake { group.cancelAll() }
        switch await group.nextResult()! {
        case .success(let value):
            // Also at the deadline: a result that is there is never thrown away.
            return value
        case .failure(let bodyError):
            if case .deadline = wake { throw error }
            throw bodyError
        }
    }
}
