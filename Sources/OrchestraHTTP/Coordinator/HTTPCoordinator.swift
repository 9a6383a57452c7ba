import Foundation
public import HTTPTypes
import Orchestra

/// Sends HTTP requests with limits, priorities, timeouts, retries and token refresh: the
/// seeds' API managers and batch requests, written once.
///
/// ```swift
/// let api = HTTPCoordinator(transport: URLSessionTransport(), configuration: .init(
///     maxConcurrentRequests: 8,
///     authentication: .init(refresher: refresher)))
/// let profile = try await api.data(for: HTTPRequest(method: .get, url: profileURL))
/// let images = try await urls.concurrentMap(limit: 8) { url in
///     try await api.data(for: HTTPRequest(method: .get, url: url)).body
/// }
/// ```
///
/// - **Limits:** at most ``Configuration/maxConcurrentRequests`` in flight, and
///   ``Configuration/maxConcurrentRequestsPerHost`` per host; both can change while requests
///   run (``setLimits(total:perHost:)``). Waiting requests start in priority order; one whose
///   host is full never holds back a request to another host. A request waiting for a token
///   refresh or a retry backoff holds no slot.
/// - **Timeouts:** each attempt is limited to ``Configuration/requestTimeout`` from when it
///   gets its slot; it then ends with a `TimeoutError`.
/// - **Retries:** transient failures of idempotent requests (see ``Configuration/retry``).
/// - **Authentication:** each request is signed with the current token; when the server
///   refuses it, the request waits for the one shared refresh and is re-sent (see
///   ``TokenRefresher``).
///
/// Cancellation: cancelling the calling task ends its request (waiting or in flight) with
/// `CancellationError`; nothing else is affected.
public final class HTTPCoordinator: Sendable {
    private let transport: any HTTPTransport
    let configuration: Configuration
    private let admission: Locked<RequestAdmission>
    /// The clock, type-erased: `withRetry` and `withTimeout` on the caller's clock.
    private let retrying: @Sendable (RetryPolicy, @escaping @Sendable () async throws -> HTTPResult) async throws -> HTTPResult
    let timing: @Sendable (Duration, @escaping @Sendable () async throws -> any Sendable) async throws -> any Sendable

    /// - Parameters:
    ///   - transport: What sends the requests. Give it at least as many connections per host as
    ///     ``Configuration/maxConcurrentRequestsPerHost`` (``URLSessionTransport`` has 64).
    ///   - configuration: Limits, timeouts, retries, authentication.
    ///   - clock: Measures timeouts and backoffs.
    public init<C: Clock>(
        transport: any HTTPTransport, configuration: Configuration = Configuration(), clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        checkArgument(configuration.maxConcurrentRequests >= 1, "HTTPCoordinator: maxConcurrentRequests must be at least 1, got \(configuration.maxConcurrentRequests)")
        checkArgument(configuration.maxConcurrentRequestsPerHost >= 1, "HTTPCoordinator: maxConcurrentRequestsPerHost must be at least 1, got \(configuration.maxConcurrentRequestsPerHost)")
        self.transport = transport
        self.configuration = configuration
        self.admission = Locked(RequestAdmission(
            totalLimit: configuration.maxConcurrentRequests, perHostLimit: configuration.maxConcurrentRequestsPerHost
        ))
        self.retrying = { policy, body in try await withRetry(policy, clock: clock, body) }
        self.timing = { timeout, body in try await withTimeout(timeout, clock: clock, body) }
    }

    /// Sends `request` and returns the response with its body, whatever its status (a status
    /// is not an error; a transient status after the last retry is returned too).
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body, sent again on a retry or after a token refresh.
    ///   - priority: Among requests waiting for a slot, higher first; 0 by default.
    ///   - progress: Called with the bytes of the response body received so far and the bytes
    ///     expected, if known, as they arrive (both transports stream; a transport that does
    ///     not reports once, at the end). A retried request starts again from 0.
    /// - Throws: `CancellationError`; `TimeoutError` when the last attempt timed out; the
    ///   transport's error when the last attempt could not be made; ``AuthenticationError``
    ///   when no valid token could be had.
    public func data(
        for request: HTTPRequest, body: Data? = nil, priority: Int = 0,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil
    ) async throws -> HTTPResult {
        guard let authentication = configuration.authentication else {
            return try await sendWithRetries(request, body: body, priority: priority, progress: progress, attemptsBefore: 0)
        }
        var token = try await authentication.refresher.token()
        var attempts = 0
        var resends = 0
        while true {
            var signed = request
            authentication.sign(&signed, token)
            var result = try await sendWithRetries(signed, body: body, priority: priority, progress: progress, attemptsBefore: attempts)
            attempts = result.attempts
            guard authentication.isAuthenticationFailure(result.response, result.body), resends < authentication.maxResends else {
                result.attempts = attempts
                return result
            }
            // Refused: wait (holding no slot) for the one shared refresh, then send again.
            token = try await authentication.refresher.token(replacing: token)
            resends += 1
        }
    }

    /// Sends `request` straight to the transport: no limit, no authentication, no retry. For
    /// the token refresh itself, which must not wait behind the requests it unblocks.
    public func sendBypassingLimits(_ request: HTTPRequest, body: Data? = nil) async throws -> HTTPResult {
        let (response, data) = try await transport.send(request, body: body)
        return HTTPResult(response: response, body: data)
    }

    /// Changes the limits while requests run: a rise starts waiting requests at once, a fall
    /// lets requests in flight finish.
    public func setLimits(total: Int? = nil, perHost: Int? = nil) {
        let admitted = admission.withLock { state in
            state.setLimits(total: total ?? state.totalLimit, perHost: perHost ?? state.perHostLimit)
        }
        for waiter in admitted { waiter.resume() }
    }

    /// Requests in flight now, and the most there have been at once.
    public var inFlight: (now: Int, peak: Int) {
        admission.withLock { ($0.inFlight, $0.peakInFlight) }
    }

    /// Requests waiting for a slot now.
    public var waitingCount: Int {
        admission.withLock { $0.waitingCount }
    }

    // MARK: - One request

    private func sendWithRetries(
        _ request: HTTPRequest, body: Data?, priority: Int,
        progress: (@Sendable (Int, Int?) -> Void)?, attemptsBefore: Int
    ) async throws -> HTTPResult {
        let retryable = Self.isIdempotent(request)
        var policy = configuration.retry
        let userRetryable = policy.isRetryable
        policy.isRetryable = { error in retryable && Self.isTransient(error) && userRetryable(error) }
        policy.serverDelay = { error in (error as? HTTPStatusError)?.retryAfter }
        let attempts = Locked(attemptsBefore)
        do {
            return try await retrying(policy) {
                let attempt = attempts.withLock { $0 += 1; return $0 }
                var result = try await self.sendOnce(request, body: body, priority: priority, progress: progress)
                result.attempts = attempt
                if Self.transientStatuses.contains(result.response.status.code) {
                    throw HTTPStatusError(result: result, retryAfter: Self.retryAfter(result.response))
                }
                return result
            }
        } catch let error as HTTPStatusError {
            return error.result
        }
    }

    /// One attempt: a slot, then the transport within the timeout.
    private func sendOnce(
        _ request: HTTPRequest, body: Data?, priority: Int, progress: (@Sendable (Int, Int?) -> Void)?
    ) async throws -> HTTPResult {
        let host = "\(request.scheme ?? "")://\(request.authority ?? "")"
        try await admission.suspendUntilAdmitted(RequestAdmission.Request(host: host, priority: priority))
        defer {
            let admitted = admission.withLock { $0.release(host: host) }
            for waiter in admitted { waiter.resume() }
        }
        let transport = self.transport
        let send: @Sendable () async throws -> HTTPResult = {
            let (response, data) = if let progress {
                try await transport.send(request, body: body, progress: progress)
            } else {
                try await transport.send(request, body: body)
            }
            return HTTPResult(response: response, body: data)
        }
        guard let timeout = configuration.requestTimeout else { return try await send() }
        return try await timing(timeout) { try await send() } as! HTTPResult
    }

    // MARK: - Classification

    static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// Safe to send twice: an idempotent method, or any request with an idempotency key.
    static func isIdempotent(_ request: HTTPRequest) -> Bool {
        switch request.method {
        case .get, .head, .options, .put, .delete, .trace: true
        default: request.headerFields[HTTPField.Name("Idempotency-Key")!] != nil
        }
    }

    static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case is CancellationError: false
        case is HTTPStatusError, is TimeoutError: true
        case is HTTPTransportError, is AuthenticationError: false
        default: true // the transport could not reach the server (refused, reset, DNS…)
        }
    }

    /// `Retry-After` as seconds or as an HTTP date (then the time from `now` until that date;
    /// zero if it has passed). `nil` if the header is missing or neither form.
    package static func retryAfter(_ response: HTTPResponse, now: Date = Date()) -> Duration? {
        guard let value = response.headerFields[.retryAfter]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSince(now) * 1_000)))
    }
}
