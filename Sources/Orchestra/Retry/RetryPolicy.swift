/// When and how often to try failed work again: bounded attempts, exponential backoff with
/// jitter, a cap on the delay, a predicate for retryable errors and a hook for a delay the
/// server asked for (`Retry-After`).
///
/// ```swift
/// struct ServerError: Error { var status: Int; var retryAfter: Duration? }
///
/// let policy = RetryPolicy(
///     maxAttempts: 4,
///     initialDelay: .milliseconds(200),
///     isRetryable: { [503, 504].contains(($0 as? ServerError)?.status ?? 0) },
///     serverDelay: { ($0 as? ServerError)?.retryAfter }
/// )
/// let data = try await withRetry(policy) { try await fetch(url) }
/// ```
///
/// The delay before attempt *n + 1* is `min(maxDelay, initialDelay × multiplier^(n−1))`,
/// reduced by jitter: with `jitter` *j* it is drawn uniformly from `[(1 − j)·d, d]`
/// (`1` is "full jitter", `0` none). A server-given delay replaces the computed one, up to
/// ``maximumServerDelay``: a failure that asks for more ends the retries at once with a
/// ``RetryError`` (``RetryError/Code/serverDelayTooLong``) instead of waiting.
public struct RetryPolicy: Sendable {
    /// The total number of attempts, the first one included (1 means no retry).
    public var maxAttempts: Int
    /// The delay before the second attempt, before jitter.
    public var initialDelay: Duration
    /// The factor by which the delay grows after each failed attempt.
    public var multiplier: Double
    /// The largest computed delay (a server-given delay has its own cap,
    /// ``maximumServerDelay``).
    public var maxDelay: Duration
    /// The longest delay a failure may ask for (``serverDelay``); 30 s by default. A failure
    /// that asks for more is not retried: ``withRetry(_:clock:isolation:onRetry:_:)`` throws
    /// a ``RetryError`` with ``RetryError/Code/serverDelayTooLong`` at once, without
    /// sleeping. *Why:* a delay from a server is outside input; without a cap,
    /// `Retry-After: 86400` makes a call wait a day in silence.
    public var maximumServerDelay: Duration
    /// How much of each delay is randomised, from `0` (none) to `1` (full jitter).
    public var jitter: Double
    /// Whether an error is worth another attempt. `CancellationError` never is.
    public var isRetryable: @Sendable (any Error) -> Bool
    /// A delay the failure itself asks for (an HTTP `Retry-After`), used instead of the backoff.
    public var serverDelay: @Sendable (any Error) -> Duration?
    /// The source of jitter; seed it to replay a run exactly.
    public var randomSource: RandomSource

    /// Creates a policy. Invalid values are programmer errors and trap with a message naming
    /// the parameter and the value.
    public init(
        maxAttempts: Int = 3,
        initialDelay: Duration = .milliseconds(100),
        multiplier: Double = 2,
        maxDelay: Duration = .seconds(30),
        maximumServerDelay: Duration = .seconds(30),
        jitter: Double = 1,
        randomSource: RandomSource = .system,
        isRetryable: @escaping @Sendable (any Error) -> Bool = { _ in true },
        serverDelay: @escaping @Sendable (any Error) -> Duration? = { _ in nil }
    ) {
        checkArgument(maxAttempts >= 1, "RetryPolicy(maxAttempts:): must be at least 1, got \(maxAttempts)")
        checkArgument(initialDelay >= .zero, "RetryPolicy(initialDelay:): must not be negative, got \(initialDelay)")
        checkArgument(multiplier >= 1, "RetryPolicy(multiplier:): must be at least 1, got \(multiplier)")
        checkArgument(maxDelay >= .zero, "RetryPolicy(maxDelay:): must not be negative, got \(maxDelay)")
        checkArgument(
            maximumServerDelay >= .zero,
            "RetryPolicy(maximumServerDelay:): must not be negative, got \(maximumServerDelay)")
        checkArgument((0...1).contains(jitter), "RetryPolicy(jitter:): must be between 0 and 1, got \(jitter)")
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.maximumServerDelay = maximumServerDelay
        self.jitter = jitter
        self.randomSource = randomSource
        self.isRetryable = isRetryable
        self.serverDelay = serverDelay
    }

    /// Three attempts, 100 ms doubling, full jitter, every error but cancellation retried.
    public static var `default`: RetryPolicy { RetryPolicy() }

    /// A single attempt.
    public static var never: RetryPolicy { RetryPolicy(maxAttempts: 1) }

    /// Whether attempt number `attempt` (1-based) failing with `error` should be followed by
    /// another attempt.
    public func shouldRetry(after error: any Error, attempt: Int) -> Bool {
        attempt < maxAttempts && !(error is CancellationError) && isRetryable(error)
    }

    /// The backoff before the attempt that follows failed attempt number `attempt` (1-based),
    /// before jitter and without a server-given delay.
    public func backoff(afterAttempt attempt: Int) -> Duration {
        let exponent = Double(max(attempt - 1, 0))
        let scaled = initialDelay.seconds * pow(multiplier, exponent)
        // Saturates: after enough attempts the factor overflows to infinity (and 0 × ∞ is NaN
        // when there is no initial delay).
        guard initialDelay > .zero else { return .zero }
        return !scaled.isFinite || scaled >= maxDelay.seconds ? maxDelay : .wholeNanoseconds(scaled)
    }

    /// The delay to wait after failed attempt number `attempt` (1-based) ended with `error`:
    /// the server's delay if it gave one (a negative one counts as zero, one longer than
    /// ``maximumServerDelay`` as that limit), else the jittered backoff.
    ///
    /// A retry loop of your own should ask ``serverDelayError(afterAttempt:error:)`` first, and
    /// stop with its error rather than wait when it returns one.
    public func delay(afterAttempt attempt: Int, error: any Error) -> Duration {
        if let requested = serverDelay(error) {
            return clamped(requested)
        }
        return jitteredBackoff(afterAttempt: attempt)
    }

    /// The error that ends the retries when failed attempt number `attempt` (1-based) ended
    /// with `error` and that error asks (``serverDelay``) to wait longer than
    /// ``maximumServerDelay``; `nil` when it asks for no delay or an acceptable one.
    public func serverDelayError(afterAttempt attempt: Int, error: any Error) -> RetryError? {
        decision(afterAttempt: attempt, error: error).refusal
    }

    /// The delay after failed attempt `attempt`, or the error that refuses it, and whether the
    /// delay is the failure's own: one call of ``serverDelay``, compared before any arithmetic.
    func decision(
        afterAttempt attempt: Int, error: any Error
    ) -> (delay: Duration, refusal: RetryError?, isServerDelay: Bool) {
        guard let requested = serverDelay(error) else {
            return (jitteredBackoff(afterAttempt: attempt), nil, false)
        }
        guard requested <= maximumServerDelay else {
            let refusal = RetryError(
                code: .serverDelayTooLong, attempt: attempt, underlying: error, requestedDelay: requested,
                limit: maximumServerDelay)
            return (maximumServerDelay, refusal, true)
        }
        return (clamped(requested), nil, true)
    }

    /// A server-given delay within `0 ... maximumServerDelay`.
    private func clamped(_ requested: Duration) -> Duration {
        min(max(requested, .zero), maximumServerDelay)
    }

    private func jitteredBackoff(afterAttempt attempt: Int) -> Duration {
        let full = backoff(afterAttempt: attempt)
        guard jitter > 0 else { return full }
        let fraction = 1 - jitter * randomSource.nextUnitInterval()
        return .wholeNanoseconds(full.seconds * fraction)
    }
}

/// `pow` without importing Foundation: exponentiation by squaring for whole exponents, which is
/// all the backoff needs.
private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var factor = base
    var n = Int(exponent)
    while n > 0 {
        if n & 1 == 1 { result *= factor }
        factor *= factor
        n >>= 1
    }
    return result
}
