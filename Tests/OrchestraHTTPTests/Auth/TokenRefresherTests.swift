import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// A stand-in for an API server: it accepts one token value at a time and counts refreshes.
final class TokenServer: Sendable {
    private let state = Locked((valid: "t0", issued: 0, refreshes: 0, served: 0))

    /// Issues the next token, invalidating the previous one, like a refresh endpoint.
    func refresh() -> AuthToken {
        state.withLock { state in
            state.issued += 1
            state.refreshes += 1
            state.valid = "t\(state.issued)"
            return AuthToken(state.valid)
        }
    }

    /// Answers a request signed with `token`: true for 200, false for 401.
    func handle(_ token: SignedToken) -> Bool {
        state.withLock { state in
            guard token.value == state.valid else { return false }
            state.served += 1
            return true
        }
    }

    func expireCurrentToken() {
        state.withLock { $0.valid = "expired" }
    }

    var refreshes: Int { state.withLock { $0.refreshes } }
    var served: Int { state.withLock { $0.served } }
}

/// What a coordinated request does with a refresher: sign, send, and on a 401 re-send once per
/// refresh with the replacement token.
func authorizedRequest(_ refresher: TokenRefresher, _ server: TokenServer, maxResends: Int = 3) async throws -> Int {
    var token = try await refresher.token()
    for _ in 0...maxResends {
        if server.handle(token) { return token.version }
        token = try await refresher.token(replacing: token)
    }
    throw TestError("still rejected after \(maxResends) re-sends")
}

struct TestError: Error, Equatable, CustomStringConvertible {
    var name: String
    init(_ name: String) { self.name = name }
    var description: String { name }
}

@Suite("TokenRefresher", .timeLimit(.minutes(1)), .takesTurns)
struct TokenRefresherTests {
    @Test func aTokenStormCausesExactlyOneRefreshAndEveryRequestSucceeds() async throws {
        let server = TokenServer()
        let release = AsyncEvent()
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in
            try await release.wait()
            return server.refresh()
        }
        server.expireCurrentToken()
        let versions = try await withHangGuard {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<1_000 {
                    group.addTask { try await authorizedRequest(refresher, server) }
                }
                try await waitUntil("the refresh started") { refresher.refreshCount == 1 }
                release.signal()
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        #expect(server.refreshes == 1)
        #expect(refresher.refreshCount == 1)
        #expect(versions.count == 1_000)
        #expect(versions.allSatisfy { $0 == 1 })
        #expect(server.served == 1_000, "none lost, none served twice")
    }

    @Test func aRejectionOfAnOlderVersionGetsTheCurrentTokenWithoutARefresh() async throws {
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t\(Int.random(in: 1...9))") }
        let first = try await refresher.token()
        let second = try await refresher.token(replacing: first)
        #expect(second.version == 1)
        #expect(refresher.refreshCount == 1)
        // A request signed with version 0 comes back rejected after the refresh:
        let again = try await refresher.token(replacing: first)
        #expect(again == second)
        #expect(refresher.refreshCount == 1)
    }

    @Test func aTokenIsRefreshedBeforeItExpiresWithinTheMargin() async throws {
        let clock = ManualClock()
        let logins = EventLog<AuthToken?>()
        let refresher = TokenRefresher(
            initial: AuthToken("t0", lifetime: .seconds(60)), refreshMargin: .seconds(10), clock: clock
        ) { old in
            logins.append(old)
            return AuthToken("t1", lifetime: .seconds(60))
        }
        _ = clock.advance(by: .seconds(49))
        #expect(try await refresher.token().version == 0)
        _ = clock.advance(by: .seconds(1))
        let fresh = try await refresher.token()
        #expect(fresh == SignedToken(value: "t1", version: 1))
        #expect(logins.events == [AuthToken("t0", lifetime: .seconds(60))])
        // The new token's lifetime counts from when it arrived.
        _ = clock.advance(by: .seconds(49))
        #expect(try await refresher.token().version == 1)
        #expect(refresher.refreshCount == 1)
    }

    @Test func withoutATokenTheFirstRequestRefreshesFromNothing() async throws {
        let logins = EventLog<AuthToken?>()
        let refresher = TokenRefresher(initial: nil) { old in
            logins.append(old)
            return AuthToken("first")
        }
        #expect(try await refresher.token() == SignedToken(value: "first", version: 1))
        #expect(logins.count == 1 && logins.events[0] == nil)
    }

    @Test func aFailedRefreshIsFinalForEveryWaiterAndIsNotRetried() async throws {
        let release = AsyncEvent()
        let attempts = EventLog<Int>()
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in
            attempts.append(1)
            try await release.wait()
            throw TestError("refresh endpoint down")
        }
        let rejected = SignedToken(value: "t0", version: 0)
        let errors = try await withHangGuard {
            try await withThrowingTaskGroup(of: AuthenticationError?.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        do {
                            _ = try await refresher.token(replacing: rejected)
                            return nil
                        } catch {
                            return error as? AuthenticationError
                        }
                    }
                }
                // A refresh that never starts fails the test here (NeverHappened), not later.
                try await waitUntil("the refresh started") { attempts.count == 1 }
                release.signal()
                return try await group.reduce(into: [AuthenticationError?]()) { $0.append($1) }
            }
        }
        #expect(errors.count == 50)
        #expect(errors.allSatisfy { $0?.code == .refreshFailed })
        #expect((errors.first??.underlying as? TestError) == TestError("refresh endpoint down"))
        // Later requests fail at once: no second refresh of the same token.
        let later = await #expect(throws: AuthenticationError.self) { try await refresher.token(replacing: rejected) }
        #expect(later?.code == .refreshFailed)
        #expect(attempts.count == 1)

        // A new login clears it.
        refresher.reset(to: AuthToken("relogged"))
        #expect(try await refresher.token() == SignedToken(value: "relogged", version: 1))
    }

    @Test func aRefreshThatReturnsAnInvalidTokenStopsWithTheBoundedError() async throws {
        let clock = ManualClock()
        let server = TokenServer()
        // The refresh endpoint hands out tokens the API server never accepts.
        let refresher = TokenRefresher(initial: AuthToken("t0"), maxRefreshes: 3, per: .seconds(60), clock: clock) {
            _ in
            _ = server.refresh()
            return AuthToken("bad")
        }
        server.expireCurrentToken()
        let error = await #expect(throws: AuthenticationError.self) {
            try await authorizedRequest(refresher, server, maxResends: 10)
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(server.refreshes == 3)
        // Stopped: no further refresh on the next request either.
        await #expect(throws: AuthenticationError.self) { try await authorizedRequest(refresher, server) }
        #expect(server.refreshes == 3)
    }

    @Test func onlyRefreshesInsideTheWindowCount() async throws {
        let clock = ManualClock()
        let counter = Locked(0)
        let refresher = TokenRefresher(initial: AuthToken("t0"), maxRefreshes: 2, per: .seconds(60), clock: clock) {
            _ in
            let number = counter.withLock {
                $0 += 1
                return $0
            }
            return AuthToken("t\(number)")
        }
        var token = try await refresher.token()
        token = try await refresher.token(replacing: token)  // t = 0 s
        _ = clock.advance(by: .seconds(30))
        token = try await refresher.token(replacing: token)  // t = 30 s
        _ = clock.advance(by: .seconds(31))
        token = try await refresher.token(replacing: token)  // t = 61 s: the first has left the window
        #expect(token.version == 3)
        let error = await #expect(throws: AuthenticationError.self) { try await refresher.token(replacing: token) }
        #expect(error?.code == .excessiveRefresh)
        #expect(error?.message.contains("at most 2") == true)
        #expect(refresher.refreshCount == 3)
    }

    @Test func aCancelledWaiterLeavesWithoutAffectingTheOthers() async throws {
        let release = AsyncEvent()
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in
            try await release.wait()
            return AuthToken("t1")
        }
        let rejected = SignedToken(value: "t0", version: 0)
        let leaving = Task { try await refresher.token(replacing: rejected) }
        let staying = Task { try await refresher.token(replacing: rejected) }
        try await waitUntil("both wait for the refresh") { refresher.refreshWaiters == 2 }
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await withHangGuard { try await leaving.value } }
        release.signal()
        #expect(try await withHangGuard { try await staying.value } == SignedToken(value: "t1", version: 1))
        #expect(refresher.refreshCount == 1)
    }

    @Test(.enabled(if: ExitTests.areEnabled))
    func maxRefreshesBelowOneAndANegativeMarginAreProgrammerErrorsNamingTheValue() async {
        let count = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TokenRefresher(initial: nil, maxRefreshes: 0) { _ in AuthToken("never") }
        }
        let countMessage = String(decoding: count?.standardErrorContent ?? [], as: UTF8.self)
        #expect(countMessage.contains("TokenRefresher(maxRefreshes:) must be at least 1, got 0"), "\(countMessage)")
        let margin = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TokenRefresher(initial: nil, refreshMargin: .seconds(-1)) { _ in AuthToken("never") }
        }
        let marginMessage = String(decoding: margin?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            marginMessage.contains("TokenRefresher(refreshMargin:) must not be negative, got -1.0 seconds"),
            "\(marginMessage)")
    }
}

/// A token lifetime of issue 13 with what the default 30 s margin becomes for it.
struct LifetimeCase: Sendable, CustomTestStringConvertible {
    var lifetime: Duration
    /// `min(30 s, lifetime / 2)`.
    var margin: Duration
    /// Refreshes over ten lifetimes with a request every tenth of one.
    var refreshesOverTenLifetimes: Int

    /// When a token obtained at 0 is renewed.
    var due: Duration { lifetime - margin }
    var testDescription: String { "lifetime \(lifetime)" }

    static let all = [
        LifetimeCase(lifetime: .seconds(1), margin: .milliseconds(500), refreshesOverTenLifetimes: 20),
        LifetimeCase(lifetime: .seconds(10), margin: .seconds(5), refreshesOverTenLifetimes: 20),
        LifetimeCase(lifetime: .seconds(45), margin: .milliseconds(22_500), refreshesOverTenLifetimes: 20),
        LifetimeCase(lifetime: .seconds(3_600), margin: .seconds(30), refreshesOverTenLifetimes: 10),
    ]
}

/// A refresh endpoint for a server that accepts only the newest token, issued with `lifetime`.
func refreshing(_ server: TokenServer, lifetime: Duration) -> @Sendable (AuthToken?) async throws -> AuthToken {
    { _ in
        let issued = server.refresh()
        return AuthToken(issued.value, lifetime: lifetime)
    }
}

/// Short token lifetimes: the margin scales down, renewals are not mistaken for a loop, and
/// rejections still are (issue 13).
@Suite("TokenRefresher: token lifetimes", .timeLimit(.minutes(1)), .takesTurns)
struct TokenLifetimeTests {
    @Test(arguments: LifetimeCase.all)
    func theMarginIsAtMostHalfTheLifetime(_ lifetimeCase: LifetimeCase) {
        #expect(
            TokenStateMachine.refreshMargin(.seconds(30), forLifetime: lifetimeCase.lifetime) == lifetimeCase.margin)
    }

    @Test(arguments: LifetimeCase.all)
    func aFreshTokenIsUsedWithoutARefresh(_ lifetimeCase: LifetimeCase) async throws {
        let clock = ManualClock()
        let server = TokenServer()
        let refresher = TokenRefresher(
            initial: nil, clock: clock, refresh: refreshing(server, lifetime: lifetimeCase.lifetime))
        // The login's token goes to its caller and to every request after it.
        #expect(try await refresher.token() == SignedToken(value: "t1", version: 1))
        for _ in 0..<10 {
            #expect(try await authorizedRequest(refresher, server) == 1)
        }
        #expect(refresher.refreshCount == 1)

        let started = TokenRefresher(initial: AuthToken("t0", lifetime: lifetimeCase.lifetime), clock: clock) { _ in
            Issue.record("a token given at the start must be used")
            return AuthToken("never")
        }
        #expect(try await started.token() == SignedToken(value: "t0", version: 0))
        #expect(started.refreshCount == 0)
    }

    @Test(arguments: LifetimeCase.all)
    func aRefreshHappensOnlyOnceTheScaledMarginIsReached(_ lifetimeCase: LifetimeCase) async throws {
        let clock = ManualClock()
        let server = TokenServer()
        let refresher = TokenRefresher(
            initial: AuthToken("t0", lifetime: lifetimeCase.lifetime), clock: clock,
            refresh: refreshing(server, lifetime: lifetimeCase.lifetime)
        )
        clock.advance(by: lifetimeCase.due - .milliseconds(1))
        #expect(try await refresher.token().version == 0)
        #expect(refresher.refreshCount == 0)
        clock.advance(by: .milliseconds(1))
        #expect(try await refresher.token() == SignedToken(value: "t1", version: 1))
        #expect(try await refresher.token().version == 1, "the fresh token is used")
        #expect(refresher.refreshCount == 1)
        // The new token's margin counts from when it arrived.
        clock.advance(by: lifetimeCase.due - .milliseconds(1))
        #expect(try await refresher.token().version == 1)
        clock.advance(by: .milliseconds(1))
        #expect(try await refresher.token().version == 2)
        #expect(refresher.refreshCount == 2)
    }

    @Test(arguments: LifetimeCase.all)
    func manyRequestsOverSeveralLifetimesNeverRaiseExcessiveRefresh(_ lifetimeCase: LifetimeCase) async throws {
        let clock = ManualClock()
        let server = TokenServer()
        // The defaults: at most 5 suspect refreshes a minute. A 1 s token is renewed 20 times
        // in the 10 s below.
        let refresher = TokenRefresher(
            initial: nil, clock: clock, refresh: refreshing(server, lifetime: lifetimeCase.lifetime))
        _ = try await refresher.token()
        let logins = refresher.refreshCount
        for _ in 0..<100 {
            clock.advance(by: lifetimeCase.lifetime / 10)
            _ = try await authorizedRequest(refresher, server, maxResends: 0)
        }
        #expect(refresher.refreshCount - logins == lifetimeCase.refreshesOverTenLifetimes)
        // Idle for longer than a lifetime before each request: the token really expired, and is
        // renewed without counting as a loop.
        for _ in 0..<10 {
            clock.advance(by: lifetimeCase.lifetime * 3)
            _ = try await authorizedRequest(refresher, server, maxResends: 0)
        }
        #expect(refresher.refreshCount - logins == lifetimeCase.refreshesOverTenLifetimes + 10)
        #expect(server.served == 110, "every request accepted at its first try")
    }

    @Test(arguments: LifetimeCase.all)
    func repeatedRejectionsStillStopAndSayTheServerRejectedFreshTokens(_ lifetimeCase: LifetimeCase) async throws {
        let clock = ManualClock()
        let server = TokenServer()
        // The refresh endpoint hands out tokens the API server never accepts.
        let refresher = TokenRefresher(
            initial: AuthToken("t0", lifetime: lifetimeCase.lifetime), maxRefreshes: 3, clock: clock
        ) { _ in
            _ = server.refresh()
            return AuthToken("bad", lifetime: lifetimeCase.lifetime)
        }
        server.expireCurrentToken()
        clock.advance(by: lifetimeCase.margin / 2)
        let error = await #expect(throws: AuthenticationError.self) {
            try await authorizedRequest(refresher, server, maxResends: 10)
        }
        #expect(error?.code == .excessiveRefresh)
        #expect(
            error?.message.hasPrefix(
                "the server rejected 3 fresh tokens and 1 older one: stopped after 3 such refreshes") == true,
            "\(error?.message ?? "")")
        #expect(error?.message.contains("(at most 3 allowed)") == true)
        #expect(server.refreshes == 3)
    }

    @Test func tokensThatArriveExpiredAreCountedAndNamed() async throws {
        let clock = ManualClock()
        let refresher = TokenRefresher(initial: nil, maxRefreshes: 2, clock: clock) { _ in
            AuthToken("dead", lifetime: .zero)
        }
        // The login's token is used once, however short its life.
        #expect(try await refresher.token().version == 1)
        #expect(try await refresher.token().version == 2)
        #expect(try await refresher.token().version == 3)
        let error = await #expect(throws: AuthenticationError.self) { try await refresher.token() }
        #expect(error?.code == .excessiveRefresh)
        #expect(
            error?.message.hasPrefix("3 tokens from the refresh had already expired when they arrived") == true,
            "\(error?.message ?? "")")
        #expect(refresher.refreshCount == 3)
    }
}
