import Foundation
public import HTTPTypes
public import Orchestra

extension HTTPCoordinator {
    /// Limits, timeouts, retries and authentication of an ``HTTPCoordinator``.
    public struct Configuration: Sendable {
        /// Requests in flight at once, over all hosts; 16 by default. At least 1.
        public var maxConcurrentRequests: Int
        /// Requests in flight at once to one host (its scheme, host and port: `https://HOST` and
        /// `https://host:443/` are one host); 6 by default, like browsers. At least 1.
        public var maxConcurrentRequestsPerHost: Int
        /// Limits of particular hosts, in place of ``maxConcurrentRequestsPerHost`` for them.
        /// A key is `host` (every port of that host) or `host:port` (`127.0.0.1:8080`,
        /// `[::1]:443`). Hosts compare as DNS does: in any case, a trailing dot ignored
        /// (`Example.com.` is `example.com`); a request's port is the one in its authority, else
        /// its scheme's (`example.com:443` limits `https://example.com/`); userinfo is ignored. A
        /// request uses the key naming its `host:port` if there is one, else the one naming its
        /// host. All the hosts one key matches share its limit; two keys naming the same host
        /// share the lower limit. Empty by default; each limit at least 1.
        public var hostLimits: [String: Int]
        /// The time limit of each attempt, from when it starts (its slot, and its start time
        /// under the rates); 30 s by default.
        public var requestTimeout: Duration?
        /// Retries of transient failures: statuses 408, 429, 500, 502, 503 and 504, timeouts
        /// and transport errors, for idempotent requests only (GET, HEAD, OPTIONS, PUT, DELETE,
        /// TRACE, or any request with an `Idempotency-Key` header). `Retry-After` is honoured
        /// up to the policy's `RetryPolicy.maximumServerDelay` (30 s by default); a server
        /// that asks for more fails the request at once with a `RetryError`. Three attempts
        /// with jittered exponential backoff by default.
        public var retry: RetryPolicy
        /// How requests are signed and what counts as an authentication failure; none by
        /// default.
        public var authentication: Authentication?
        /// Redirects followed for each request: at most 10 by default (see
        /// ``HTTPRedirectPolicy`` for the rules).
        public var redirects: HTTPRedirectPolicy
        /// Requests started per interval over all hosts (`.perSecond(50)`); not limited by
        /// default. Every attempt counts: retries, redirects followed and re-sends after a token
        /// refresh.
        public var rate: Rate?
        /// Requests started per interval to each host that ``hostRates`` does not name; not
        /// limited by default.
        public var perHostRate: Rate?
        /// Rates of particular hosts, in place of ``perHostRate`` for them, keyed like
        /// ``hostLimits`` (`host` or `host:port`); all the hosts one key matches share its
        /// rate. Empty by default.
        public var hostRates: [String: Rate]
        /// Starts granted at once after a quiet time, by each rate (see `RateLimiter`'s
        /// `burst`); 1 by default, which spaces every start. At least 1.
        public var rateBurst: Int
        /// Whether the server paces its host: a 429 or 503 with `Retry-After` holds *every*
        /// request to that host until then (at most the retry policy's
        /// `RetryPolicy.maximumServerDelay`), and its `RateLimit`/`X-RateLimit` fields
        /// (``HTTPRateLimitHeaders``) lower the host's rate to what it announces, never above
        /// the configured one. `true` by default.
        public var adaptsToServer: Bool
        /// Called with each change the server made to a host's pace (``HTTPRateEvent``), on the
        /// task whose response caused it; keep it quick.
        public var onRateEvent: (@Sendable (HTTPRateEvent) -> Void)?

        /// A configuration; every parameter is described by the property of the same name.
        public init(
            maxConcurrentRequests: Int = 16,
            maxConcurrentRequestsPerHost: Int = 6,
            hostLimits: [String: Int] = [:],
            requestTimeout: Duration? = .seconds(30),
            retry: RetryPolicy = RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(200), maxDelay: .seconds(10)),
            redirects: HTTPRedirectPolicy = .follow(),
            authentication: Authentication? = nil,
            rate: Rate? = nil,
            perHostRate: Rate? = nil,
            hostRates: [String: Rate] = [:],
            rateBurst: Int = 1,
            adaptsToServer: Bool = true,
            onRateEvent: (@Sendable (HTTPRateEvent) -> Void)? = nil
        ) {
            self.maxConcurrentRequests = maxConcurrentRequests
            self.maxConcurrentRequestsPerHost = maxConcurrentRequestsPerHost
            self.hostLimits = hostLimits
            self.requestTimeout = requestTimeout
            self.retry = retry
            self.redirects = redirects
            self.authentication = authentication
            self.rate = rate
            self.perHostRate = perHostRate
            self.hostRates = hostRates
            self.rateBurst = rateBurst
            self.adaptsToServer = adaptsToServer
            self.onRateEvent = onRateEvent
        }
    }

    /// Signs requests with a ``TokenRefresher``'s token and re-sends a request the server
    /// rejected, once per refresh.
    public struct Authentication: Sendable {
        /// The tokens.
        public var refresher: TokenRefresher
        /// Puts the token on a request; by default `Authorization: Bearer <token>`.
        public var sign: @Sendable (inout HTTPRequest, SignedToken) -> Void
        /// Whether a response means the token was refused; by default a 401. A server that
        /// answers 200 with `{"error": "token_expired"}` is expressed here.
        public var isAuthenticationFailure: @Sendable (HTTPResponse, Data) -> Bool
        /// How many times one request may be re-sent with a refreshed token; 2 by default, 0
        /// never re-sends. A negative value is a programmer error: the coordinator traps,
        /// naming it.
        public var maxResends: Int

        /// Signs requests with `refresher`'s token and refreshes it when a response says it was refused (`isAuthenticationFailure`); each parameter is described by the property of the same name.
        public init(
            refresher: TokenRefresher,
            maxResends: Int = 2,
            sign: @escaping @Sendable (inout HTTPRequest, SignedToken) -> Void = { request, token in
                request.headerFields[.authorization] = "Bearer \(token.value)"
            },
            isAuthenticationFailure: @escaping @Sendable (HTTPResponse, Data) -> Bool = { response, _ in
                response.status == .unauthorized
            }
        ) {
            self.refresher = refresher
            self.maxResends = maxResends
            self.sign = sign
            self.isAuthenticationFailure = isAuthenticationFailure
        }
    }
}

/// A response and its body.
public struct HTTPResult: Sendable {
    /// The status and header fields.
    public var response: HTTPResponse
    /// The whole body.
    public var body: Data
    /// Attempts made, including retries, redirects followed and re-sends after a token
    /// refresh.
    public var attempts: Int
    /// The redirects followed to get this response, in order (empty if none).
    public var redirects: [HTTPRedirect]

    /// A result; `attempts` and `redirects` say how it was obtained.
    public init(response: HTTPResponse, body: Data, attempts: Int = 1, redirects: [HTTPRedirect] = []) {
        self.response = response
        self.body = body
        self.attempts = attempts
        self.redirects = redirects
    }

    /// The response's status.
    public var status: HTTPResponse.Status { response.status }
}

/// An attempt that ended with a status worth retrying (``HTTPRetry/statuses``).
///
/// The coordinator throws it inside its retry loop, so that the policy sees it, and returns
/// its ``result`` after the last attempt. It reaches you as the
/// `RetryError.underlying` error of a `RetryError` when the server asked, with
/// `Retry-After`, to wait longer than `RetryPolicy.maximumServerDelay`, and as the
/// ``HTTPRetryEvent/failure`` of a retry.
public struct HTTPStatusError: Error, Sendable, CustomStringConvertible {
    /// The response, with its body.
    public var result: HTTPResult
    /// The server's `Retry-After`, if it sent a valid one: seconds, or the time until an
    /// HTTP date (zero for a date past); a number too large for an `Int64` counts as
    /// `Int64.max` seconds.
    public var retryAfter: Duration?

    /// An attempt that ended with `result`, whose `Retry-After` asked for `retryAfter`.
    public init(result: HTTPResult, retryAfter: Duration? = nil) {
        self.result = result
        self.retryAfter = retryAfter
    }

    /// `HTTP 503 Service Unavailable`.
    public var description: String {
        "HTTP \(result.response.status.code) \(result.response.status.reasonPhrase)"
    }
}
