public import HTTPTypes
public import Orchestra

/// How one request is sent, where it differs from its coordinator's
/// ``HTTPCoordinator/Configuration``: its priority, retries, time limit, redirects and
/// whether it is signed.
///
/// ```swift
/// let options = HTTPRequestOptions(
///     retry: HTTPRetry(policy: RetryPolicy(maxAttempts: 5), statuses: [503], methods: .all),
///     timeout: .seconds(5),
///     redirects: .never)
/// let result = try await api.data(for: upload, body: data, options: options)
/// ```
///
/// A `nil` property means "as the configuration says".
public struct HTTPRequestOptions: Sendable {
    /// Among requests waiting for a slot, higher first; 0 by default.
    public var priority: Int
    /// Which failures are sent again, and how; `nil`: the configuration's
    /// ``HTTPCoordinator/Configuration/retry`` for idempotent requests and the usual transient
    /// statuses.
    public var retry: HTTPRetry?
    /// The time limit of each attempt, from when it gets its slot; `nil`: the configuration's
    /// ``HTTPCoordinator/Configuration/requestTimeout``.
    public var timeout: Duration?
    /// Whether and how far redirects are followed; `nil`: the configuration's
    /// ``HTTPCoordinator/Configuration/redirects``.
    public var redirects: HTTPRedirectPolicy?
    /// Whether the configuration's ``HTTPCoordinator/Authentication`` signs the request (and
    /// refreshes the token when it is refused); `true` by default. `false` sends it unsigned.
    public var isAuthenticated: Bool
    /// Called as each attempt starts and ends, while the attempt holds its slot: times taken
    /// here never show more requests in flight than the limits allow. Called on the task that
    /// sends the request; keep it short.
    public var onAttempt: (@Sendable (HTTPAttemptEvent) -> Void)?
    /// Called as each attempt has its slot, just before it is handed to the transport (after
    /// any wait for a slot, a backoff or a token): the place to record, durably, that a
    /// request is about to go out. It holds the slot while it runs. An error it throws ends
    /// the request unsent, and is not retried. Cancellation: the caller's.
    public var willSend: (@Sendable (HTTPRequest) async throws -> Void)?
    /// Called when a failed attempt is about to be retried, before the wait: how long, and
    /// whether the server asked for it (`Retry-After`). For logging; called on the task that
    /// sends the request, holding no slot. Keep it short.
    public var onRetry: (@Sendable (HTTPRetryEvent) -> Void)?
    /// Header fields of the request that carry credentials, besides `Authorization`,
    /// `Proxy-Authorization`, `Cookie` and the one the configuration's
    /// ``HTTPCoordinator/Authentication`` signs with: each is dropped, like those, when a
    /// redirect leads to another origin (see ``HTTPRedirectPolicy``). Empty by default.
    public var credentialFields: Set<HTTPField.Name>
    /// What the transport does with the response's body: in memory within a limit (the
    /// default), handed to a sink as it arrives (a download that is never held whole), decoded
    /// or as sent. See ``HTTPResponseBodyHandling``.
    public var responseBody: HTTPResponseBodyHandling = .standard

    /// Options; each parameter is described by the property of the same name (`nil`: the coordinator's configuration).
    public init(
        priority: Int = 0, retry: HTTPRetry? = nil, timeout: Duration? = nil, redirects: HTTPRedirectPolicy? = nil,
        isAuthenticated: Bool = true, onAttempt: (@Sendable (HTTPAttemptEvent) -> Void)? = nil,
        willSend: (@Sendable (HTTPRequest) async throws -> Void)? = nil,
        onRetry: (@Sendable (HTTPRetryEvent) -> Void)? = nil, credentialFields: Set<HTTPField.Name> = []
    ) {
        self.onRetry = onRetry
        self.credentialFields = credentialFields
        self.willSend = willSend
        self.priority = priority
        self.retry = retry
        self.timeout = timeout
        self.redirects = redirects
        self.isAuthenticated = isAuthenticated
        self.onAttempt = onAttempt
    }
}

/// Which failed attempts of a request are sent again: transient statuses, timeouts and
/// transient transport errors, for the methods it names, with the backoff of its
/// ``policy``. A `Retry-After` from the server replaces the backoff, up to the policy's
/// `RetryPolicy.maximumServerDelay`: a server that asks for more fails the request at once
/// with a `RetryError` (`RetryError.Code.serverDelayTooLong`) whose
/// `RetryError.underlying` error is the ``HTTPStatusError`` with the response.
public struct HTTPRetry: Sendable {
    /// Which requests may be sent twice.
    public enum Methods: Sendable, Hashable {
        /// Idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) and any request with an
        /// `Idempotency-Key` header: sending them twice does no harm.
        case idempotent
        /// Every request, POST included: for callers who know their server (a workflow author
        /// who asked for retries).
        case all
    }

    /// Attempts, backoff and jitter. Its `isRetryable` is consulted too, after the checks of
    /// statuses and methods.
    public var policy: RetryPolicy
    /// Statuses worth another attempt; 408, 429, 500, 502, 503 and 504 by default.
    public var statuses: Set<Int>
    /// Which methods are retried; only idempotent ones by default (a keyed POST counts).
    public var methods: Methods

    /// The statuses retried by default.
    public static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// Retries with `policy` the responses whose status is in `statuses`, for `methods`.
    public init(policy: RetryPolicy, statuses: Set<Int> = HTTPRetry.transientStatuses, methods: Methods = .idempotent) {
        self.policy = policy
        self.statuses = statuses
        self.methods = methods
    }

    /// A single attempt.
    public static var never: HTTPRetry { HTTPRetry(policy: .never) }

    /// Whether `request` may be sent again under these rules.
    func allows(_ request: HTTPRequest) -> Bool {
        switch methods {
        case .all: true
        case .idempotent: HTTPCoordinator.isIdempotent(request)
        }
    }
}

/// One attempt of a request, as ``HTTPRequestOptions/onAttempt`` sees it.
public enum HTTPAttemptEvent: Sendable {
    /// The attempt got its slot and is handed to the transport (signed, after any redirect).
    case started(HTTPRequest)
    /// The attempt ended, with a response or an error (a timeout, the transport's error,
    /// `CancellationError`); its slot is released just after.
    case ended(HTTPRequest, Result<HTTPResponse, any Error>)
}

/// A failed attempt of a request that is about to be retried, as
/// ``HTTPRequestOptions/onRetry`` sees it.
public struct HTTPRetryEvent: Sendable {
    /// The request that is sent again (signed, after any redirect).
    public var request: HTTPRequest
    /// The number of the attempt that failed, among the attempts at this request and hop
    /// (1-based).
    public var attempt: Int
    /// Why it failed: an ``HTTPStatusError`` for a transient status, else a `TimeoutError`
    /// or the transport's error.
    public var failure: any Error
    /// How long the next attempt waits.
    public var delay: Duration
    /// Whether ``delay`` is the server's `Retry-After` (at most the policy's
    /// `RetryPolicy.maximumServerDelay`) rather than the policy's backoff.
    public var isRetryAfter: Bool

    /// The response of the failed attempt, if it ended with a transient status.
    public var response: HTTPResponse? { (failure as? HTTPStatusError)?.result.response }
}
