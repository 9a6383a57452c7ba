import Foundation
public import HTTPTypes
import Orchestra

/// Sends HTTP requests with limits, priorities, timeouts, retries and token refresh: what
/// hand-written API managers and batch-request classes each do, written once.
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
///   ``Configuration/maxConcurrentRequestsPerHost`` per host, or a host's own
///   ``Configuration/hostLimits`` entry; all can change while requests run
///   (``setLimits(total:perHost:hosts:)``). Waiting requests start in priority order; one whose
///   host is full never holds back a request to another host. A request waiting for a token
///   refresh or a retry backoff holds no slot.
/// - **Rates:** at most ``Configuration/rate`` starts over all hosts and each host's rate
///   (``Configuration/hostRates``, ``Configuration/perHostRate``); a request takes its slot, then
///   its start time. The server paces its host (``Configuration/adaptsToServer``): a 429 or 503
///   with `Retry-After` holds every request to that host, and `RateLimit` fields lower its rate
///   (``HTTPRateEvent``, ``hostRates``).
/// - **Timeouts:** each attempt is limited to ``Configuration/requestTimeout`` from when it
///   starts (its slot and its start time granted); it then ends with a `TimeoutError`.
/// - **Retries:** transient failures of idempotent requests (see ``Configuration/retry``);
///   a request can carry its own rules (``HTTPRequestOptions``). A `Retry-After` longer than
///   the policy's `RetryPolicy.maximumServerDelay` fails the request at once with a
///   `RetryError`.
/// - **Redirects:** followed by the coordinator itself, each hop within the limits, with
///   307/308 re-sending the method and body (see ``HTTPRedirectPolicy``); the hops are in
///   ``HTTPResult/redirects``. No credential the request carries, the token included,
///   follows a hop to another origin.
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
    private let pacer: HostPacer
    /// The clock, type-erased: `withRetry` and `withTimeout` on the caller's clock.
    private let retrying:
        @Sendable (
            RetryPolicy, (@Sendable (RetryEvent) -> Void)?, @escaping @Sendable () async throws -> HTTPResult
        ) async throws -> HTTPResult
    let timing: @Sendable (Duration, @escaping @Sendable () async throws -> any Sendable) async throws -> any Sendable
    /// The clock is the real one: a timed request goes through the transport's
    /// ``HTTPTransport/send(_:content:progress:timeout:)``, which knows its time limit, instead
    /// of ``timing``.
    private let transportTimesRequests: Bool

    /// - Parameters:
    ///   - transport: What sends the requests. Give it at least as many connections per host as
    ///     ``Configuration/maxConcurrentRequestsPerHost`` (``URLSessionTransport`` has 64). It
    ///     must return redirects as they are: the coordinator follows them.
    ///   - configuration: Limits, timeouts, retries, redirects, authentication.
    ///   - clock: Measures timeouts and backoffs.
    public init<C: Clock>(
        transport: any HTTPTransport, configuration: Configuration = Configuration(), clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        checkArgument(
            configuration.maxConcurrentRequests >= 1,
            "HTTPCoordinator: maxConcurrentRequests must be at least 1, got \(configuration.maxConcurrentRequests)")
        checkArgument(
            configuration.maxConcurrentRequestsPerHost >= 1,
            "HTTPCoordinator: maxConcurrentRequestsPerHost must be at least 1, got \(configuration.maxConcurrentRequestsPerHost)"
        )
        Self.checkHostLimits(configuration.hostLimits)
        checkArgument(
            configuration.rateBurst >= 1,
            "HTTPCoordinator: rateBurst must be at least 1, got \(configuration.rateBurst)")
        for pattern in configuration.hostRates.keys {
            checkArgument(
                Self.isHostPattern(pattern), "HTTPCoordinator: hostRates key '\(pattern)' is not 'host' or 'host:port'")
        }
        if let resends = configuration.authentication?.maxResends {
            checkArgument(
                resends >= 0, "HTTPCoordinator: authentication.maxResends must not be negative, got \(resends)")
        }
        self.transport = transport
        self.configuration = configuration
        self.admission = Locked(
            RequestAdmission(
                totalLimit: configuration.maxConcurrentRequests,
                perHostLimit: configuration.maxConcurrentRequestsPerHost,
                groupLimits: Self.groupLimits(configuration.hostLimits)
            ))
        self.pacer = HostPacer(configuration: configuration, clock: clock)
        self.retrying = { policy, onRetry, body in try await withRetry(policy, clock: clock, onRetry: onRetry, body) }
        self.timing = { timeout, body in try await withTimeout(timeout, clock: clock, body) }
        self.transportTimesRequests = C.self == ContinuousClock.self
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
    ///   when no valid token could be had; ``HTTPRedirectError`` when a redirect could not be
    ///   followed; `RetryError` (`RetryError.Code.serverDelayTooLong`) when a retried
    ///   status asked, with `Retry-After`, to wait longer than the policy's
    ///   `RetryPolicy.maximumServerDelay` (its `RetryError.underlying` error is the
    ///   ``HTTPStatusError`` with the response).
    public func data(
        for request: HTTPRequest, body: Data? = nil, priority: Int = 0,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil
    ) async throws -> HTTPResult {
        try await data(for: request, body: body, options: HTTPRequestOptions(priority: priority), progress: progress)
    }

    /// Sends `request` like ``data(for:body:priority:progress:)``, with its own retries,
    /// time limit, redirect policy or signing (see ``HTTPRequestOptions``).
    ///
    /// ```swift
    /// // A POST the caller knows is safe to repeat, without following redirects.
    /// let result = try await api.data(for: post, body: json, options: .init(
    ///     retry: HTTPRetry(policy: RetryPolicy(maxAttempts: 4), methods: .all), redirects: .never))
    /// ```
    ///
    /// Cancellation: cancelling the calling task ends the request (waiting for a slot, a token
    /// or a backoff, or in flight) with `CancellationError`.
    public func data(
        for request: HTTPRequest, body: Data? = nil, options: HTTPRequestOptions,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil
    ) async throws -> HTTPResult {
        try await data(for: request, content: HTTPRequestBody.from(body), options: options, progress: progress)
    }

    /// Sends `request` like ``data(for:body:options:progress:)`` with `content`, bytes or a
    /// file. A transport that streams (AsyncHTTPClient's) sends a file as it reads it, so a
    /// large upload does not sit in memory; each attempt and each redirect that keeps the body
    /// reads the file again.
    public func data(
        for request: HTTPRequest, content: HTTPRequestBody?, options: HTTPRequestOptions,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil
    ) async throws -> HTTPResult {
        let body = content
        let plan = Plan(
            priority: options.priority, retry: options.retry ?? HTTPRetry(policy: configuration.retry),
            timeout: options.timeout ?? configuration.requestTimeout,
            redirects: options.redirects ?? configuration.redirects,
            onAttempt: options.onAttempt, willSend: options.willSend, onRetry: options.onRetry,
            credentialFields: options.credentialFields, progress: progress, responseBody: options.responseBody
        )
        guard options.isAuthenticated, let authentication = configuration.authentication else {
            return try await sendFollowingRedirects(request, body: body, plan, attemptsBefore: 0)
        }
        var token = try await authentication.refresher.token()
        var attempts = 0
        var resends = 0
        while true {
            var signed = request
            authentication.sign(&signed, token)
            // The token goes to this origin only: whatever fields `sign` set are dropped on a
            // redirect to another one, like Authorization.
            var signedPlan = plan
            signedPlan.credentialFields.formUnion(Self.fieldsChanged(from: request, to: signed))
            var result = try await sendFollowingRedirects(signed, body: body, signedPlan, attemptsBefore: attempts)
            attempts = result.attempts
            // A refusal from another origin (reached by a redirect, without the token) says
            // nothing of the token: it is returned, not answered with a refresh.
            guard authentication.isAuthenticationFailure(result.response, result.body),
                !result.leftOrigin(of: signed),
                resends < authentication.maxResends
            else {
                result.attempts = attempts
                return result
            }
            // Refused: wait (holding no slot) for the one shared refresh, then send again.
            token = try await authentication.refresher.token(replacing: token)
            resends += 1
        }
    }

    /// Sends `request` straight to the transport: no limit, no authentication, no retry, no
    /// redirect followed. For the token refresh itself, which must not wait behind the
    /// requests it unblocks.
    public func sendBypassingLimits(_ request: HTTPRequest, body: Data? = nil) async throws -> HTTPResult {
        let (response, data) = try await transport.send(request, body: body)
        return HTTPResult(response: response, body: data)
    }

    /// Waits for `request`'s start time under the coordinator's rates (its host's permit, the
    /// overall one, a pause its host is under) without taking a slot, and counts it as sent:
    /// for requests sent around the coordinator (``sendBypassingLimits(_:body:)``, a login)
    /// that must still keep to the rates. Pass its response to ``observeRate(_:of:)``.
    ///
    /// - Throws: `CancellationError`.
    package func waitForRate(of request: HTTPRequest) async throws {
        try await pacer.acquire(pacer.key(scheme: request.scheme ?? "", authority: request.authority ?? ""))
    }

    /// Reads the response to a request sent after ``waitForRate(of:)``, as the coordinator reads
    /// its own: a 429's `Retry-After` pauses the host, `RateLimit` fields set its rate.
    package func observeRate(_ response: HTTPResponse, of request: HTTPRequest) {
        pacer.observe(
            response, key: pacer.key(scheme: request.scheme ?? "", authority: request.authority ?? ""),
            maximumDelay: configuration.retry.maximumServerDelay)
    }

    /// Changes the limits while requests run: a rise starts waiting requests at once, a fall
    /// lets requests in flight finish. `hosts` replaces every ``Configuration/hostLimits``
    /// entry (`nil` keeps them); a request already in flight keeps counting against the entry
    /// it was admitted under.
    public func setLimits(total: Int? = nil, perHost: Int? = nil, hosts: [String: Int]? = nil) {
        checkArgument(
            total.map { $0 >= 1 } ?? true, "HTTPCoordinator.setLimits(total:): must be at least 1, got \(total ?? 0)")
        checkArgument(
            perHost.map { $0 >= 1 } ?? true,
            "HTTPCoordinator.setLimits(perHost:): must be at least 1, got \(perHost ?? 0)")
        if let hosts { Self.checkHostLimits(hosts) }
        let admitted = admission.withLock { state in
            state.setLimits(
                total: total ?? state.totalLimit, perHost: perHost ?? state.perHostLimit,
                groups: hosts.map(Self.groupLimits))
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

    /// Each host's requests sent, configured and effective rate, 429s and pauses, by host
    /// (at most `10,000` hosts: past that, a host without a configured rate is not counted).
    public var hostRates: [HTTPHostRate] {
        pacer.hostRates
    }

    // MARK: - One request

    /// What one call resolved from its options and the configuration.
    private struct Plan: Sendable {
        var priority: Int
        var retry: HTTPRetry
        var timeout: Duration?
        var redirects: HTTPRedirectPolicy
        var onAttempt: (@Sendable (HTTPAttemptEvent) -> Void)?
        var willSend: (@Sendable (HTTPRequest) async throws -> Void)?
        var onRetry: (@Sendable (HTTPRetryEvent) -> Void)?
        /// Fields dropped on a hop to another origin, besides ``RedirectRule``'s own.
        var credentialFields: Set<HTTPField.Name>
        var progress: (@Sendable (Int, Int?) -> Void)?
        var responseBody: HTTPResponseBodyHandling
    }

    /// The names of the fields `signed` sets or changes from `request`.
    private static func fieldsChanged(from request: HTTPRequest, to signed: HTTPRequest) -> Set<HTTPField.Name> {
        var changed: Set<HTTPField.Name> = []
        for field in signed.headerFields
        where request.headerFields[values: field.name] != signed.headerFields[values: field.name] {
            changed.insert(field.name)
        }
        return changed
    }

    /// Sends `request`, then each request a redirect leads to, as the plan's policy allows.
    private func sendFollowingRedirects(
        _ request: HTTPRequest, body: HTTPRequestBody?, _ plan: Plan, attemptsBefore: Int
    ) async throws -> HTTPResult {
        var current = (request: request, body: body)
        var hops: [HTTPRedirect] = []
        var attempts = attemptsBefore
        while true {
            var result = try await sendWithRetries(current.request, body: current.body, plan, attemptsBefore: attempts)
            attempts = result.attempts
            guard plan.redirects.maxHops > 0 else { return result }
            let next: (request: HTTPRequest, body: HTTPRequestBody?, location: String)?
            do {
                next = try RedirectRule.next(
                    after: current.request, body: current.body, response: result.response,
                    credentials: plan.credentialFields)
            } catch {
                var error = error
                error.hops = hops
                throw error
            }
            guard let next else {
                result.redirects = hops
                return result
            }
            hops.append(HTTPRedirect(status: result.response.status.code, location: next.location))
            guard hops.count <= plan.redirects.maxHops else {
                throw HTTPRedirectError(
                    code: .tooManyRedirects, hops: hops,
                    message:
                        "too many redirects: stopped at the \(Self.ordinal(hops.count)) (at most \(plan.redirects.maxHops) are followed), a \(result.response.status.code) to \(next.location)"
                )
            }
            current = (next.request, next.body)
        }
    }

    private static func ordinal(_ n: Int) -> String {
        let suffix = (11...13).contains(n % 100) ? "th" : [1: "st", 2: "nd", 3: "rd"][n % 10] ?? "th"
        return "\(n)\(suffix)"
    }

    private func sendWithRetries(
        _ request: HTTPRequest, body: HTTPRequestBody?, _ plan: Plan, attemptsBefore: Int
    ) async throws -> HTTPResult {
        let retryable = plan.retry.allows(request)
        let statuses = plan.retry.statuses
        var policy = plan.retry.policy
        let userRetryable = policy.isRetryable
        policy.isRetryable = { error in retryable && Self.isTransient(error) && userRetryable(error) }
        policy.serverDelay = { error in (error as? HTTPStatusError)?.retryAfter }
        let attempts = Locked(attemptsBefore)
        var onRetry: (@Sendable (RetryEvent) -> Void)?
        if let report = plan.onRetry {
            onRetry = { @Sendable (event: RetryEvent) in
                report(
                    HTTPRetryEvent(
                        request: request, attempt: event.attempt, failure: event.error, delay: event.delay,
                        isRetryAfter: event.isServerDelay))
            }
        }
        do {
            return try await retrying(policy, onRetry) {
                let attempt = attempts.withLock {
                    $0 += 1
                    return $0
                }
                var result = try await self.sendOnce(request, body: body, plan)
                result.attempts = attempt
                if statuses.contains(result.response.status.code) {
                    throw HTTPStatusError(result: result, retryAfter: Self.retryAfter(result.response))
                }
                return result
            }
        } catch let error as HTTPStatusError {
            return error.result
        } catch let error as WillSendFailure {
            throw error.underlying
        }
    }

    /// An error of ``HTTPRequestOptions/willSend``: the request was not sent, and is not
    /// retried.
    private struct WillSendFailure: Error {
        let underlying: any Error
    }

    /// One attempt: a slot, then the transport within the timeout, reported to `onAttempt`
    /// while the slot is held.
    private func sendOnce(_ request: HTTPRequest, body: HTTPRequestBody?, _ plan: Plan) async throws -> HTTPResult {
        // Parsed once for the slot's group and the rate's key (and not again for the next
        // request to the same place).
        let pacer = self.pacer
        let route = admission.withLock {
            $0.route(scheme: request.scheme ?? "", authority: request.authority ?? "") { host, scheme in
                pacer.key(of: host, scheme: scheme)
            }
        }
        let host = route.group
        try await admission.suspendUntilAdmitted(RequestAdmission.Request(host: host, priority: plan.priority))
        defer {
            let admitted = admission.withLock { $0.release(host: host) }
            for waiter in admitted { waiter.resume() }
        }
        // Its start time, holding its slot (as a slow response would): a request that waited
        // for its slot must not then start at once with every other that did.
        let paceKey = route.paceKey
        try await pacer.acquire(paceKey)
        if let willSend = plan.willSend {
            do {
                try await willSend(request)
            } catch {
                throw WillSendFailure(underlying: error)
            }
        }
        plan.onAttempt?(.started(request))
        let transport = self.transport
        let progress = plan.progress
        let responseBody = plan.responseBody
        let send: @Sendable (Duration?) async throws -> HTTPResult = { timeout in
            let (response, data) =
                responseBody.isStandard
                ? try await transport.send(request, content: body, progress: progress, within: timeout)
                : try await transport.send(
                    request, content: body, receiving: responseBody, progress: progress, timeout: timeout)
            return HTTPResult(response: response, body: data)
        }
        do {
            // On the real clock the transport times the request (and may pass the limit on);
            // on another clock (a test's) the request is raced against that clock's timer.
            let result =
                if let timeout = plan.timeout, !transportTimesRequests {
                    try await timing(timeout) { try await send(nil) } as! HTTPResult
                } else {
                    try await send(plan.timeout)
                }
            pacer.observe(result.response, key: paceKey, maximumDelay: plan.retry.policy.maximumServerDelay)
            plan.onAttempt?(.ended(request, .success(result.response)))
            return result
        } catch {
            plan.onAttempt?(.ended(request, .failure(error)))
            throw error
        }
    }

    // MARK: - Host limits

    private static func checkHostLimits(_ limits: [String: Int]) {
        for (pattern, limit) in limits {
            checkArgument(limit >= 1, "HTTPCoordinator: hostLimits['\(pattern)'] must be at least 1, got \(limit)")
            checkArgument(
                isHostPattern(pattern), "HTTPCoordinator: hostLimits key '\(pattern)' is not 'host' or 'host:port'")
        }
    }

    /// Whether `pattern` is `host` or `host:port` (a bracketed IPv6 address as the host), as
    /// ``HTTPHostKey/init(pattern:)`` reads it.
    package static func isHostPattern(_ pattern: String) -> Bool {
        HTTPHostKey(pattern: pattern) != nil
    }

    private static func groupLimits(_ limits: [String: Int]) -> [HTTPHostKey: Int] {
        HTTPHostKey.limits(limits.map { ($0.key, $0.value) })
    }

    // MARK: - Classification

    /// Safe to send twice: an idempotent method, or any request with an idempotency key.
    static func isIdempotent(_ request: HTTPRequest) -> Bool {
        isIdempotent(
            method: request.method, hasIdempotencyKey: request.headerFields[HTTPField.Name("Idempotency-Key")!] != nil)
    }

    /// Safe to send twice: an idempotent method (GET, HEAD, OPTIONS, PUT, DELETE, TRACE), or
    /// any request with an idempotency key.
    package static func isIdempotent(method: HTTPRequest.Method, hasIdempotencyKey: Bool) -> Bool {
        switch method {
        case .get, .head, .options, .put, .delete, .trace: true
        default: hasIdempotencyKey
        }
    }

    static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case is CancellationError: false
        case is HTTPStatusError, is TimeoutError: true
        case let error as HTTPTransportError: error.isTransient
        case is AuthenticationError, is HTTPRedirectError, is WillSendFailure: false
        default: true  // an unclassified failure of a third-party transport
        }
    }

    /// `Retry-After` as seconds or as an HTTP date (then the time from `now` until that date;
    /// zero if it has passed). `nil` if the header is missing or neither form (a negative
    /// number is neither). The value is the server's: it is saturated, not trusted — a number
    /// of seconds beyond `Int64.max`, or a date further away than that, gives `Int64.max`
    /// seconds — and the retry policy compares it with its
    /// `RetryPolicy.maximumServerDelay` before any arithmetic.
    package static func retryAfter(_ response: HTTPResponse, now: Date = Date()) -> Duration? {
        guard let value = response.headerFields[.retryAfter]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if !value.isEmpty, value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return .seconds(Int64(value) ?? .max)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds > 0 else { return .zero }
        // In whole milliseconds while an Int64 holds them (≈ 292 million years), else saturated.
        guard seconds < 9e15 else { return .seconds(Int64.max) }
        return .milliseconds(Int64((seconds * 1_000).rounded(.up)))
    }
}
