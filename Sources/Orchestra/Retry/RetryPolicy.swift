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
/// (`1` is "full jitter", `0` none). A server-given delay replaces the computed one.
public struct RetryPolicy: Sendable {
    /// The total number of attempts, the first one included (1 means no retry).
    public var maxAttempts: Int
    /// The delay before the second attempt, before jitter.
    public var initialDelay: Duration
    /// The factor by which the delay grows after each failed attempt.
    public var multiplier: Double
    /// The largest computed delay (a server-given delay is not capped).
    public var maxDelay: Duration
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
        jitter: Double = 1,
        randomSource: RandomSource = .system,
        isRetryable: @escaping @Sendable (any Error) -> Bool = { _ in true },
        serverDelay: @escaping @Sendable (any Error) -> Duration? = { _ in nil }
    ) {
        checkArgument(maxAttempts >= 1, "RetryPolicy(maxAttempts:): must be at least 1, got \(maxAttempts)")
        checkArgument(initialDelay >= .zero, "RetryPolicy(initialDelay:): must not be negative, got \(initialDelay)")
        checkArgument(multiplier >= 1, "RetryPolicy(multiplier:): must be at least 1, got \(multiplier)")
        checkArgument(maxDelay >= .zero, "RetryPolicy(maxDelay:): must not be negative, got \(maxDelay)")
        checkArgument((0...1).contains(jitter), "RetryPolicy(jitter:): must be between 0 and 1, got \(jitter)")
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
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
    /// the server's delay if it gave one, else the jittered backoff.
    public func delay(afterAttempt attempt: Int, error: any Error) -> Duration {
        if let requested = serverDelay(error) {
            return max(requested, .zero)
        }
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
