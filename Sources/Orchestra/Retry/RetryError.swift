/// Why ``withRetry(_:clock:isolation:onRetry:_:)`` stopped before its attempts were used up,
/// for a reason of the policy's own (a failure's own error is thrown unchanged).
///
/// ```swift
/// do {
///     return try await withRetry(policy) { try await api.feed() }
/// } catch let error as RetryError where error.code == .serverDelayTooLong {
///     print("the server asked to wait \(error.requestedDelay), more than \(error.limit)")
/// }
/// ```
public struct RetryError: Error, Sendable, CustomStringConvertible {
    /// What stopped the retries.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable { case serverDelayTooLong }
        private let value: Value

        /// A failure asked (through ``RetryPolicy/serverDelay``) to wait longer than
        /// ``RetryPolicy/maximumServerDelay``: the retries end at once, without waiting.
        public static let serverDelayTooLong = Code(value: .serverDelayTooLong)

        /// The code's name.
        public var description: String {
            switch value {
            case .serverDelayTooLong: "serverDelayTooLong"
            }
        }
    }

    /// What stopped the retries.
    public var code: Code
    /// The number of the attempt that failed last (1-based).
    public var attempt: Int
    /// The error of that attempt (the one that asked for the delay).
    public var underlying: any Error
    /// The delay the failure asked for (for ``Code/serverDelayTooLong``).
    public var requestedDelay: Duration
    /// The limit it went over: ``RetryPolicy/maximumServerDelay``.
    public var limit: Duration

    /// A failure of `code` after attempt `attempt` ended with `underlying`.
    public init(code: Code, attempt: Int, underlying: any Error, requestedDelay: Duration, limit: Duration) {
        self.code = code
        self.attempt = attempt
        self.underlying = underlying
        self.requestedDelay = requestedDelay
        self.limit = limit
    }

    /// `attempt 1 failed (…) and asked to wait 86400.0 seconds, more than maximumServerDelay
    /// 30.0 seconds`.
    public var description: String {
        "attempt \(attempt) failed (\(underlying)) and asked to wait \(requestedDelay) before the next, "
            + "more than maximumServerDelay \(limit)"
    }
}
