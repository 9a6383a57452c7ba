import Orchestra
@testable import OrchestraHTTP
import OrchestraTestKit
import Testing

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

@Suite("TokenRefresher", .timeLimit(.minutes(1)))
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
            await withTaskGroup(of: AuthenticationError?.self) { group in
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
                try? await waitUntil("the refresh started") { attempts.count == 1 }
                release.signal()
                return await group.reduce(into: [AuthenticationError?]()) { $0.append($1) }
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
        let refresher = TokenRefresher(initial: AuthToken("t0"), maxRefreshes: 3, per: .seconds(60), clock: clock) { _ in
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
        let refresher = TokenRefresher(initial: AuthToken("t0"), maxRefreshes: 2, per: .seconds(60), clock: clock) { _ in
            AuthToken("t\(counter.withLock { $0 += 1; return $0 })")
        }
        var token = try await refresher.token()
        token = try await refresher.token(replacing: token)           // t = 0 s
        _ = clock.advance(by: .seconds(30))
        token = try await refresher.token(replacing: token)           // t = 30 s
        _ = clock.advance(by: .seconds(31))
        token = try await refresher.token(replacing: token)           // t = 61 s: the first has left the window
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
}
