/// The rules of a ``TokenRefresher``, as a pure state machine: no tasks, no clocks (times are
/// offsets from the refresher's start, passed in).
///
/// - A request gets the current token unless it is due for renewal (see
///   ``refreshMargin(_:forLifetime:)``), or the server has rejected the current version (then
///   every request waits for its refresh: the auth gate).
/// - A freshly obtained token is used: it goes to every caller of its refresh, and a token
///   with a positive lifetime is never due at the instant it arrives.
/// - A rejection of an older version is answered with the current token: it was refreshed
///   since the request was signed.
/// - A refresh is started for one version only (the caller joins a single shared refresh per
///   version); its result replaces that version once.
/// - A failed refresh is final for its version: every later request for that version gets the
///   error at once, until ``reset(to:at:)``.
/// - At most `maxRefreshes` *suspect* refreshes in any `window`: those that replace a token
///   the server rejected, or one that had already expired when it arrived (a lifetime of zero
///   or less). Beyond, the version fails with `.excessiveRefresh`. Renewals of a token that
///   merely reached its margin or its end, and the first login, do not count: a short-lived
///   token renewed often is not a loop.
struct TokenStateMachine: Sendable {
    enum Need: Equatable, Sendable {
        /// Any valid token (refreshed first if it is due for renewal).
        case valid
        /// A token other than this rejected version.
        case replacing(version: Int)
    }

    enum Decision: Sendable {
        case use(SignedToken)
        /// Refresh the token of this version (0 with no token at all), sharing one refresh
        /// among every caller that needs it.
        case refresh(fromVersion: Int)
        case fail(AuthenticationError)
    }

    /// Why a refresh runs.
    enum Cause: Equatable, Sendable {
        /// There is no token yet.
        case login
        /// The token reached its refresh margin or its end.
        case renewal
        /// The server rejected the current token; `refreshed` when that token came from a
        /// refresh (a fresh one) rather than from the start or a reset.
        case rejection(refreshed: Bool)
        /// The token's lifetime was zero or less: it had expired when it arrived.
        case expiredOnArrival

        /// Whether it counts toward `maxRefreshes`: only causes that a loop would repeat.
        var isSuspect: Bool {
            switch self {
            case .login, .renewal: false
            case .rejection, .expiredOnArrival: true
            }
        }
    }

    private var token: AuthToken?
    private var version = 0
    private var obtainedAt: Duration = .zero
    /// Whether the current token came from a refresh (rather than from the start or a reset).
    private var tokenIsRefreshed = false
    private var failure: (version: Int, error: AuthenticationError)?
    /// The suspect refreshes of the last `window`, oldest first.
    private var suspectRefreshes: [(at: Duration, cause: Cause)] = []
    /// The server rejected the current version: requests wait for its refresh instead of
    /// being sent with it (the auth gate).
    private var currentRejected = false
    /// A suspect refresh of the current version has been counted: callers that need it join
    /// it (or its re-run after every waiter left) without being counted or refused again.
    private var currentRefreshCounted = false
    let margin: Duration
    let maxRefreshes: Int
    let window: Duration
    private(set) var refreshCount = 0

    init(token: AuthToken?, margin: Duration, maxRefreshes: Int, window: Duration) {
        self.token = token
        self.margin = margin
        self.maxRefreshes = maxRefreshes
        self.window = window
    }

    var currentVersion: Int { version }
    var currentToken: AuthToken? { token }

    /// How long before the end of `lifetime` a token is renewed: `margin`, but at most half the
    /// lifetime, so that a short-lived token is used for at least half of it instead of being
    /// renewed before every request (and never less than zero).
    static func refreshMargin(_ margin: Duration, forLifetime lifetime: Duration) -> Duration {
        max(.zero, min(margin, lifetime / 2))
    }

    mutating func decide(_ need: Need, at now: Duration) -> Decision {
        if case .replacing(let rejected) = need, rejected < version, let token {
            return .use(SignedToken(value: token.value, version: version))
        }
        if let failure, failure.version == version {
            return .fail(failure.error)
        }
        if case .replacing(let rejected) = need, rejected == version {
            currentRejected = true
        }
        if need == .valid, let token, !currentRejected, !isDue(token, at: now) {
            return .use(SignedToken(value: token.value, version: version))
        }
        // A refresh is needed: is one more allowed?
        let cause = refreshCause()
        if cause.isSuspect, !currentRefreshCounted {
            suspectRefreshes.removeAll { $0.at <= now - window }
            if suspectRefreshes.count >= maxRefreshes {
                let error = AuthenticationError(code: .excessiveRefresh, message: excessiveRefreshMessage(now: cause))
                failure = (version, error)
                return .fail(error)
            }
        }
        return .refresh(fromVersion: version)
    }

    enum Begin: Sendable {
        case proceed
        /// Another refresh of the same version completed meanwhile: its token.
        case use(SignedToken)
        /// Another refresh of the same version failed meanwhile: final.
        case fail(AuthenticationError)
    }

    /// A refresh of `fromVersion` is about to run: whether it must. (The shared refresh of a
    /// version ends before a caller that decided to refresh it joins: that caller starts a new
    /// one, which must not refresh again.)
    mutating func beginRefresh(fromVersion: Int, at now: Duration) -> Begin {
        if fromVersion < version, let token {
            return .use(SignedToken(value: token.value, version: version))
        }
        if let failure, failure.version == fromVersion {
            return .fail(failure.error)
        }
        let cause = refreshCause()
        if cause.isSuspect, !currentRefreshCounted {
            suspectRefreshes.append((now, cause))
            currentRefreshCounted = true
        }
        refreshCount += 1
        return .proceed
    }

    /// The refresh of `fromVersion` returned `newToken`: the callers of that refresh use it.
    mutating func refreshSucceeded(fromVersion: Int, newToken: AuthToken, at now: Duration) -> SignedToken {
        if fromVersion == version {
            token = newToken
            version += 1
            obtainedAt = now
            tokenIsRefreshed = true
            currentRejected = false
            currentRefreshCounted = false
        }
        return SignedToken(value: token!.value, version: version)
    }

    /// The refresh of `fromVersion` failed: final for that version.
    mutating func refreshFailed(fromVersion: Int, error: any Error) -> AuthenticationError {
        let failed = AuthenticationError(
            code: .refreshFailed,
            message: "refreshing the token failed (\(error)); authenticate again",
            underlying: error
        )
        if fromVersion == version, failure == nil || failure!.version != version {
            failure = (version, failed)
        }
        return failure?.version == fromVersion ? failure!.error : failed
    }

    /// A new token from a fresh login; clears a failure and the count of suspect refreshes.
    mutating func reset(to newToken: AuthToken, at now: Duration) {
        currentRejected = false
        token = newToken
        version += 1
        obtainedAt = now
        tokenIsRefreshed = false
        currentRefreshCounted = false
        failure = nil
        suspectRefreshes.removeAll()
    }

    /// Why the current version needs a refresh (called once one is needed).
    private func refreshCause() -> Cause {
        guard let token else { return .login }
        if currentRejected { return .rejection(refreshed: tokenIsRefreshed) }
        if let lifetime = token.lifetime, lifetime <= .zero { return .expiredOnArrival }
        return .renewal
    }

    /// Whether `token` must be renewed before use: it reached its (scaled) refresh margin.
    private func isDue(_ token: AuthToken, at now: Duration) -> Bool {
        guard let lifetime = token.lifetime else { return false }
        return now >= obtainedAt + lifetime - Self.refreshMargin(margin, forLifetime: lifetime)
    }

    /// What happened, from the suspect refreshes of the window and the one just refused:
    /// "the server rejected 3 fresh tokens and 1 older one: …".
    private func excessiveRefreshMessage(now refused: Cause) -> String {
        let causes = suspectRefreshes.map(\.cause) + [refused]
        let fresh = causes.filter { $0 == .rejection(refreshed: true) }.count
        let older = causes.filter { $0 == .rejection(refreshed: false) }.count
        let expired = causes.filter { $0 == .expiredOnArrival }.count
        var events: [String] = []
        if fresh > 0 { events.append("the server rejected \(Self.count(fresh, "fresh token"))") }
        if older > 0 {
            events.append(
                fresh > 0 ? Self.count(older, "older one") : "the server rejected \(Self.count(older, "token"))")
        }
        if expired > 0 {
            events.append(
                "\(Self.count(expired, "token")) from the refresh had already expired when \(expired == 1 ? "it" : "they") arrived (a lifetime of zero or less)"
            )
        }
        return events.joined(separator: " and ")
            + ": stopped after \(suspectRefreshes.count) such refreshes in the last \(window) (at most \(maxRefreshes) allowed) instead of refreshing again"
    }

    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }
}
