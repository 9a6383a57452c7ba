/// The rules of a ``TokenRefresher``, as a pure state machine: no tasks, no clocks (times are
/// offsets from the refresher's start, passed in).
///
/// - A request gets the current token unless it expires within the margin, or the server has
///   rejected the current version (then every request waits for its refresh: the auth gate).
/// - A rejection of an older version is answered with the current token: it was refreshed
///   since the request was signed.
/// - A refresh is started for one version only (the caller joins a single shared refresh per
///   version); its result replaces that version once.
/// - A failed refresh is final for its version: every later request for that version gets the
///   error at once, until ``reset(to:at:)``.
/// - At most `maxRefreshes` refreshes in any `window`: beyond, the version fails with
///   `.excessiveRefresh`.
struct TokenStateMachine: Sendable {
    enum Need: Equatable, Sendable {
        /// Any valid token (refreshed first if it expires within the margin).
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

    private var token: AuthToken?
    private var version = 0
    private var obtainedAt: Duration = .zero
    private var failure: (version: Int, error: AuthenticationError)?
    private var refreshTimes: [Duration] = []
    /// The server rejected the current version: requests wait for its refresh instead of
    /// being sent with it (the auth gate).
    private var currentRejected = false
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
        if need == .valid, let token, !currentRejected, !expiresSoon(token, at: now) {
            return .use(SignedToken(value: token.value, version: version))
        }
        // A refresh is needed: is one more allowed?
        refreshTimes.removeAll { $0 <= now - window }
        if refreshTimes.count >= maxRefreshes {
            let error = AuthenticationError(
                code: .excessiveRefresh,
                message: "\(refreshTimes.count) token refreshes in the last \(window) (at most \(maxRefreshes) allowed): "
                    + "the server keeps rejecting fresh tokens; stopped instead of refreshing again"
            )
            failure = (version, error)
            return .fail(error)
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
        refreshTimes.append(now)
        refreshCount += 1
        return .proceed
    }

    /// The refresh of `fromVersion` returned `newToken`.
    mutating func refreshSucceeded(fromVersion: Int, newToken: AuthToken, at now: Duration) -> SignedToken {
        if fromVersion == version {
            token = newToken
            version += 1
            obtainedAt = now
            currentRejected = false
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

    /// A new token from a fresh login; clears a failure.
    mutating func reset(to newToken: AuthToken, at now: Duration) {
        currentRejected = false
        token = newToken
        version += 1
        obtainedAt = now
        failure = nil
        refreshTimes.removeAll()
    }

    private func expiresSoon(_ token: AuthToken, at now: Duration) -> Bool {
        guard let lifetime = token.lifetime else { return false }
        return now >= obtainedAt + lifetime - margin
    }
}
