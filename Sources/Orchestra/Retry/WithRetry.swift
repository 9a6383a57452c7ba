/// One failed attempt that ``withRetry(_:clock:isolation:onRetry:_:)`` is about to retry.
public struct RetryEvent: Sendable {
    /// The number of the attempt that failed (1-based).
    public var attempt: Int
    /// Its error.
    public var error: any Error
    /// How long the next attempt waits.
    public var delay: Duration
    /// Whether ``delay`` is the one the failure asked for (``RetryPolicy/serverDelay``, an
    /// HTTP `Retry-After`) rather than the policy's backoff.
    public var isServerDelay: Bool
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
/// A failure that asks for a delay (``RetryPolicy/serverDelay``) longer than
/// ``RetryPolicy/maximumServerDelay`` ends the call at once, without sleeping, with a
/// ``RetryError`` (``RetryError/Code/serverDelayTooLong``) that carries the delay asked for,
/// the limit and the failure. A negative delay counts as zero. Whatever the policy says, one
/// sleep lasts at most 2³² s (about 136 years), so that no delay overflows the clock's
/// deadline arithmetic.
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
            let (delay, refusal, isServerDelay) = policy.decision(afterAttempt: attempt, error: error)
            if let refusal { throw refusal }
            onRetry?(RetryEvent(attempt: attempt, error: error, delay: delay, isServerDelay: isServerDelay))
            try await clock.sleep(until: clock.now.advanced(by: min(delay, longestRetrySleep)), tolerance: nil)
            attempt += 1
        }
    }
}

/// The longest sleep between two attempts, whatever the policy says: 2³² s (about 136 years).
/// A `ContinuousClock` deadline beyond about 2⁶³ ns (292 years) traps.
let longestRetrySleep: Duration = .seconds(1 << 32)
