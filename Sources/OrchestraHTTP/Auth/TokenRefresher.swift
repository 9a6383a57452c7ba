import Orchestra

/// Keeps an access token fresh for many concurrent requests, with the guarantees users of
/// Alamofire's `AuthenticationInterceptor` and OkHttp's `Authenticator` ask for:
///
/// 1. **One refresh at a time.** Every request that needs a fresh token waits for the same
///    refresh and gets its result.
/// 2. **Versions.** Each token handed out carries its version. A rejection of an older version
///    is answered with the current token, without a new refresh.
/// 3. **Before expiry and after a rejection**, through the same single refresh: a token whose
///    ``AuthToken/lifetime`` ends within `refreshMargin` (clock skew) is refreshed first. For a
///    short-lived token the margin shrinks to half its lifetime, so a token is always used for
///    at least half of it: with the default 30 s margin, a 10 s token is renewed after 5 s, a
///    1 h token after 59 min 30 s. A freshly obtained token is always used.
/// 4. **The refresh runs outside any limit.** It is your closure: send the refresh request
///    straight to the network, not through the limits and the auth gate of the requests it is
///    meant to unblock (they would wait for each other forever).
/// 5. **A failed refresh is final** for that token: every waiter gets an
///    ``AuthenticationError`` with code `.refreshFailed`, nothing loops, and the next request
///    for that token fails at once until ``reset(to:)`` (a new login).
/// 6. **Bounded.** At most `maxRefreshes` refreshes that replace a rejected token (or one that
///    arrived already expired, with a lifetime of zero or less) in any `window`; beyond, the
///    error has code `.excessiveRefresh` and says what happened (a server that rejects every
///    fresh token, or a refresh that returns an invalid one). Renewals of a token that reached
///    its margin or its end are not counted: a short-lived token renewed often is not a loop.
///
/// Cancellation: a cancelled waiter leaves at once with `CancellationError`; the refresh goes on
/// for the others (it is cancelled only when every waiter has left, and is not then counted as
/// failed).
///
/// ```swift
/// let refresher = TokenRefresher(initial: AuthToken(saved, lifetime: .seconds(3600))) { old in
///     try await api.refresh(old)          // returns the new AuthToken
/// }
/// let token = try await refresher.token()                    // sign a request with it
/// // … the server answered 401 to that request:
/// let fresh = try await refresher.token(replacing: token)    // one refresh for everyone
/// ```
public final class TokenRefresher: Sendable {
    private let state: Locked<TokenStateMachine>
    private let flight = SingleFlight<Int, SignedToken>()
    private let refresh: @Sendable (AuthToken?) async throws -> AuthToken
    private let elapsed: @Sendable () -> Duration

    /// - Parameters:
    ///   - initial: The token to start with (its lifetime counts from now), or `nil` to refresh
    ///     (log in) on the first request.
    ///   - refreshMargin: Refresh a token this long before its lifetime ends (clock skew), but
    ///     never before half its lifetime has passed. Must not be negative.
    ///   - maxRefreshes: At most this many refreshes caused by a rejection (or by a token that
    ///     arrived already expired) in any `window`.
    ///   - window: See `maxRefreshes`.
    ///   - clock: Measures lifetimes and the window.
    ///   - refresh: Gets a new token from the current one (`nil` if there is none). Called by
    ///     one task at a time; it must not go through the limits or the auth gate of the
    ///     requests waiting for it.
    public init<C: Clock>(
        initial: AuthToken?,
        refreshMargin: Duration = .seconds(30),
        maxRefreshes: Int = 5,
        per window: Duration = .seconds(60),
        clock: C = ContinuousClock(),
        refresh: @escaping @Sendable (_ current: AuthToken?) async throws -> AuthToken
    ) where C.Duration == Duration {
        checkArgument(maxRefreshes >= 1, "TokenRefresher(maxRefreshes:) must be at least 1, got \(maxRefreshes)")
        checkArgument(
            refreshMargin >= .zero, "TokenRefresher(refreshMargin:) must not be negative, got \(refreshMargin)")
        state = Locked(
            TokenStateMachine(token: initial, margin: refreshMargin, maxRefreshes: maxRefreshes, window: window))
        self.refresh = refresh
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
    }

    /// A valid token: the current one, or a fresh one if the current one reached its refresh
    /// margin (or there is none, or the server rejected it).
    ///
    /// - Throws: ``AuthenticationError`` if the refresh failed or was refused;
    ///   `CancellationError` if this caller is cancelled while it waits.
    public func token() async throws -> SignedToken {
        try await obtain(.valid)
    }

    /// A token to replace `rejected`, which the server refused: the current one if it is
    /// newer, otherwise the result of the one shared refresh.
    ///
    /// - Throws: ``AuthenticationError``; `CancellationError` if this caller is cancelled.
    public func token(replacing rejected: SignedToken) async throws -> SignedToken {
        try await obtain(.replacing(version: rejected.version))
    }

    /// Installs a token from a new login, clearing a failed refresh.
    public func reset(to token: AuthToken) {
        let now = elapsed()
        state.withLock { $0.reset(to: token, at: now) }
    }

    /// How many refreshes have run.
    public var refreshCount: Int {
        state.withLock { $0.refreshCount }
    }

    /// The version of the current token.
    public var currentVersion: Int {
        state.withLock { $0.currentVersion }
    }

    /// How many callers wait for the refresh of the current token (for tests).
    var refreshWaiters: Int {
        flight.waiterCount(for: currentVersion)
    }

    private func obtain(_ need: TokenStateMachine.Need) async throws -> SignedToken {
        let now = elapsed()
        switch state.withLock({ $0.decide(need, at: now) }) {
        case .use(let token):
            return token
        case .fail(let error):
            throw error
        case .refresh(let version):
            return try await flight.run(key: version) { [self] in
                try await performRefresh(fromVersion: version)
            }
        }
    }

    /// The shared refresh of one version (run by the single flight, in its own task).
    private func performRefresh(fromVersion version: Int) async throws -> SignedToken {
        let now = elapsed()
        let (begin, old) = state.withLock { state in
            (state.beginRefresh(fromVersion: version, at: now), state.currentToken)
        }
        switch begin {
        case .use(let token): return token
        case .fail(let error): throw error
        case .proceed: break
        }
        do {
            let fresh = try await refresh(old)
            let now = elapsed()
            return state.withLock { $0.refreshSucceeded(fromVersion: version, newToken: fresh, at: now) }
        } catch is CancellationError {
            // Every waiter left: not a failure of the refresh.
            throw CancellationError()
        } catch {
            throw state.withLock { $0.refreshFailed(fromVersion: version, error: error) }
        }
    }
}
