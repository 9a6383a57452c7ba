/// One failed attempt that ``withRetry(_:clock:isolation:onRetry:_:)`` is about to retry.
public struct RetryEvent: Sendable {
    /// The number of the attempt that failed (1-based).
    public var attempt: Int
    /// Its error.
    public var error: any Error
    /// How long the next attempt waits.
    public var delay: Duration
}

/// Runs `body`, trying again after failures as `policy` says.
///
/// ```swift
/// let profile = try await withRetry(.init(maxAttempts: 4)) { try await api.profile() }
/// ```
///
/// `body` runs in the caller's task and isolation, one attempt at a time. Between attempts the
/// call sleeps on `clock`. When the attempts are used up, or an error is not retryable, the
/// last error is thrown unchanged.
///
/// Cancellation stops it at once: a cancellation during a backoff throws `CancellationError`
/// without another attempt, and an attempt that fails while the task is cancelled is not
/// retried.
///
/// - Parameters:
///   - policy: Attempts, backoff, jitter and which errors to retry.
///   - clock: The clock the backoff sleeps on; a manual clock in tests.
///   - isolation: Where `body` and `onRetry` run; the caller's actor by default.
///   - onRetry: Called before each backoff, in the caller's isolation (for logging).
///   - body: One attempt.
public func withRetry<Value, C: Clock>(
    _ policy: RetryPolicy = .default,
    clock: C = ContinuousClock(),
    isolation: isolated (any Actor)? = #isolation,
    onRetry: ((RetryEvent) -> Void)? = nil,
    _ body: () async throws -> Value
) async throws -> Value where C.Duration == Duration {
    var attempt = 1
    while true {
        do {
            return try await body()
        } catch {
            guard !Task.isCancelled, policy.shouldRetry(after: error, attempt: attempt) else { throw error }
            let delay = policy.delay(afterAttempt: attempt, error: error)
            onRetry?(RetryEvent(attempt: attempt, error: error, delay: delay))
            try await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil)
            attempt += 1
        }
    }
}
