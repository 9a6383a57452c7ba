import Orchestra
import TestSupport
import Testing

@testable import OrchestraHTTP

/// The state machine alone: decisions as text, times as offsets.
@Suite("TokenRefresher: state machine", .timeLimit(.minutes(1)), .takesTurns)
struct TokenStateMachineTests {
    static func describe(_ decision: TokenStateMachine.Decision) -> String {
        switch decision {
        case .use(let token): "use \(token.value) v\(token.version)"
        case .refresh(let version): "refresh v\(version)"
        case .fail(let error): "fail \(error.code)"
        }
    }

    /// Runs the refresh `decision` asked for, returning a token of `lifetime` named `value`.
    static func refresh(
        _ machine: inout TokenStateMachine, _ decision: TokenStateMachine.Decision, to value: String,
        lifetime: Duration?, at now: Duration
    ) -> SignedToken? {
        guard case .refresh(let version) = decision, case .proceed = machine.beginRefresh(fromVersion: version, at: now)
        else { return nil }
        return machine.refreshSucceeded(fromVersion: version, newToken: AuthToken(value, lifetime: lifetime), at: now)
    }

    @Test(arguments: LifetimeCase.all)
    func renewalsAtTheScaledMarginNeverFail(_ lifetimeCase: LifetimeCase) {
        var machine = TokenStateMachine(
            token: AuthToken("t0", lifetime: lifetimeCase.lifetime), margin: .seconds(30), maxRefreshes: 5,
            window: .seconds(60))
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "use t0 v0")
        var now = Duration.zero
        for round in 1...100 {
            #expect(
                Self.describe(machine.decide(.valid, at: now + lifetimeCase.due - .nanoseconds(1)))
                    == "use t\(round - 1) v\(round - 1)")
            now += lifetimeCase.due
            let decision = machine.decide(.valid, at: now)
            #expect(Self.describe(decision) == "refresh v\(round - 1)")
            let fresh = Self.refresh(&machine, decision, to: "t\(round)", lifetime: lifetimeCase.lifetime, at: now)
            #expect(fresh == SignedToken(value: "t\(round)", version: round))
            #expect(
                Self.describe(machine.decide(.valid, at: now)) == "use t\(round) v\(round)", "a fresh token is used")
        }
        #expect(machine.refreshCount == 100)
    }

    @Test func rejectionsAreCountedInTheWindowAndTheMessageSaysSo() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 2, window: .seconds(60))
        var decision = machine.decide(.replacing(version: 0), at: .zero)
        _ = Self.refresh(&machine, decision, to: "t1", lifetime: nil, at: .zero)
        decision = machine.decide(.replacing(version: 1), at: .seconds(1))
        _ = Self.refresh(&machine, decision, to: "t2", lifetime: nil, at: .seconds(1))
        decision = machine.decide(.replacing(version: 2), at: .seconds(2))
        guard case .fail(let error) = decision else {
            Issue.record("expected a failure, got \(Self.describe(decision))")
            return
        }
        #expect(error.code == .excessiveRefresh)
        #expect(
            error.message
                == "the server rejected 2 fresh tokens and 1 older one: stopped after 2 such refreshes in the last 60.0 seconds (at most 2 allowed) instead of refreshing again"
        )
        // Final for that version; a new login starts afresh.
        #expect(Self.describe(machine.decide(.valid, at: .seconds(3))) == "fail excessiveRefresh")
        machine.reset(to: AuthToken("again"), at: .seconds(4))
        #expect(Self.describe(machine.decide(.replacing(version: 3), at: .seconds(4))) == "refresh v3")
    }

    @Test func aCallerThatNeedsTheRefreshInFlightJoinsItEvenAtTheLimit() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        let decision = machine.decide(.replacing(version: 0), at: .zero)
        #expect(Self.describe(decision) == "refresh v0")
        guard case .proceed = machine.beginRefresh(fromVersion: 0, at: .zero) else {
            Issue.record("the refresh should run")
            return
        }
        // While it runs, the limit is reached, but this refresh is already counted: join it.
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "refresh v0")
        #expect(Self.describe(machine.decide(.replacing(version: 0), at: .zero)) == "refresh v0")
        #expect(
            machine.refreshSucceeded(fromVersion: 0, newToken: AuthToken("t1"), at: .zero)
                == SignedToken(value: "t1", version: 1))
        #expect(Self.describe(machine.decide(.replacing(version: 1), at: .zero)) == "fail excessiveRefresh")
    }

    // MARK: The rules of the doc comment, one by one

    @Test func aTokenIsUsedUntilItsScaledMarginThenRenewed() {
        // Lifetime 100 s, margin 30 s (at most half of 100): due from 70 s on.
        var machine = TokenStateMachine(
            token: AuthToken("t0", lifetime: .seconds(100)), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60)
        )
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "use t0 v0")
        #expect(Self.describe(machine.decide(.valid, at: .seconds(70) - .nanoseconds(1))) == "use t0 v0")
        let decision = machine.decide(.valid, at: .seconds(70))
        #expect(Self.describe(decision) == "refresh v0")
        #expect(
            Self.refresh(&machine, decision, to: "t1", lifetime: .seconds(100), at: .seconds(70))
                == SignedToken(value: "t1", version: 1))
        #expect(Self.describe(machine.decide(.valid, at: .seconds(70))) == "use t1 v1", "a fresh token is used at once")
        #expect(Self.describe(machine.decide(.valid, at: .seconds(140) - .nanoseconds(1))) == "use t1 v1")
        #expect(Self.describe(machine.decide(.valid, at: .seconds(140))) == "refresh v1", "due 70 s after it arrived")
    }

    @Test func aTokenWithoutALifetimeIsRenewedOnlyAfterARejection() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        #expect(Self.describe(machine.decide(.valid, at: .seconds(1_000_000))) == "use t0 v0")
        #expect(Self.describe(machine.decide(.replacing(version: 0), at: .seconds(1_000_000))) == "refresh v0")
    }

    @Test func onceTheServerRejectedTheCurrentTokenEveryRequestWaitsForItsRefresh() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 5, window: .seconds(60))
        #expect(Self.describe(machine.decide(.replacing(version: 0), at: .zero)) == "refresh v0")
        // The auth gate: a request that asks for any valid token no longer gets the rejected one.
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "refresh v0")
        #expect(
            machine.refreshSucceeded(fromVersion: 0, newToken: AuthToken("t1"), at: .zero)
                == SignedToken(value: "t1", version: 1))
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "use t1 v1", "the gate opens with the new token")
    }

    @Test func aRejectionOfAnOlderVersionIsAnsweredWithTheCurrentTokenWithoutARefresh() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        let decision = machine.decide(.replacing(version: 0), at: .zero)
        _ = Self.refresh(&machine, decision, to: "t1", lifetime: nil, at: .zero)
        #expect(machine.refreshCount == 1)
        #expect(Self.describe(machine.decide(.replacing(version: 0), at: .seconds(1))) == "use t1 v1")
        #expect(machine.refreshCount == 1)
        // Even at the limit of suspect refreshes: an old rejection is not a new one.
        #expect(Self.describe(machine.decide(.valid, at: .seconds(1))) == "use t1 v1")
    }

    @Test func aRefreshIsRunOncePerVersion() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 5, window: .seconds(60))
        _ = machine.decide(.replacing(version: 0), at: .zero)
        guard case .proceed = machine.beginRefresh(fromVersion: 0, at: .zero) else {
            Issue.record("the first refresh of version 0 should run")
            return
        }
        #expect(
            machine.refreshSucceeded(fromVersion: 0, newToken: AuthToken("t1"), at: .zero)
                == SignedToken(value: "t1", version: 1))
        // A caller that decided to refresh version 0 before that refresh ended: it must not refresh again.
        guard case .use(let token) = machine.beginRefresh(fromVersion: 0, at: .zero) else {
            Issue.record("version 0 was already replaced")
            return
        }
        #expect(token == SignedToken(value: "t1", version: 1))
        // A late result for version 0 replaces nothing.
        #expect(
            machine.refreshSucceeded(fromVersion: 0, newToken: AuthToken("late"), at: .zero)
                == SignedToken(value: "t1", version: 1))
        #expect(machine.currentVersion == 1)
        #expect(machine.currentToken == AuthToken("t1"))
        #expect(machine.refreshCount == 1)
    }

    @Test func aFailedRefreshIsFinalForItsVersionUntilAReset() {
        var machine = TokenStateMachine(
            token: AuthToken("t0", lifetime: .seconds(10)), margin: .seconds(30), maxRefreshes: 5, window: .seconds(60))
        let decision = machine.decide(.valid, at: .seconds(5))
        #expect(Self.describe(decision) == "refresh v0")
        guard case .proceed = machine.beginRefresh(fromVersion: 0, at: .seconds(5)) else {
            Issue.record("the refresh should run")
            return
        }
        let error = machine.refreshFailed(fromVersion: 0, error: TestError("offline"))
        #expect(error.code == .refreshFailed)
        #expect(error.message.contains("offline"))
        #expect(error.underlying as? TestError == TestError("offline"))
        #expect(Self.describe(machine.decide(.valid, at: .seconds(5))) == "fail refreshFailed")
        #expect(Self.describe(machine.decide(.replacing(version: 0), at: .seconds(6))) == "fail refreshFailed")
        guard case .fail(let again) = machine.beginRefresh(fromVersion: 0, at: .seconds(6)) else {
            Issue.record("a refresh of a failed version must not run")
            return
        }
        #expect(again.code == .refreshFailed)
        #expect(machine.refreshCount == 1)
        machine.reset(to: AuthToken("login", lifetime: .seconds(10)), at: .seconds(7))
        #expect(Self.describe(machine.decide(.valid, at: .seconds(7))) == "use login v1")
    }

    @Test func theFirstLoginAndRenewalsAreNotCountedButRejectionsAre() {
        var machine = TokenStateMachine(token: nil, margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        var decision = machine.decide(.valid, at: .zero)
        #expect(Self.describe(decision) == "refresh v0", "no token: log in")
        _ = Self.refresh(&machine, decision, to: "t1", lifetime: .seconds(10), at: .zero)
        // Renewals every 5 s: many within the window, none counted.
        var now = Duration.zero
        for round in 2...20 {
            now += .seconds(5)
            decision = machine.decide(.valid, at: now)
            #expect(Self.describe(decision) == "refresh v\(round - 1)")
            _ = Self.refresh(&machine, decision, to: "t\(round)", lifetime: .seconds(10), at: now)
        }
        // One rejection is allowed (maxRefreshes 1); the second in the window is refused.
        decision = machine.decide(.replacing(version: 20), at: now)
        #expect(Self.describe(decision) == "refresh v20")
        _ = Self.refresh(&machine, decision, to: "t21", lifetime: .seconds(10), at: now)
        #expect(Self.describe(machine.decide(.replacing(version: 21), at: now)) == "fail excessiveRefresh")
    }

    @Test func aSuspectRefreshOlderThanTheWindowNoLongerCounts() {
        var machine = TokenStateMachine(
            token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        var decision = machine.decide(.replacing(version: 0), at: .zero)
        _ = Self.refresh(&machine, decision, to: "t1", lifetime: nil, at: .zero)
        decision = machine.decide(.replacing(version: 1), at: .seconds(60) + .nanoseconds(1))
        #expect(Self.describe(decision) == "refresh v1", "the rejection at 0 s left the window")
    }

    @Test func aTokenThatArrivesExpiredIsCountedAndNamed() {
        var machine = TokenStateMachine(
            token: AuthToken("t0", lifetime: .zero), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        var decision = machine.decide(.valid, at: .zero)
        #expect(Self.describe(decision) == "refresh v0", "a lifetime of zero is due at once")
        _ = Self.refresh(&machine, decision, to: "t1", lifetime: .zero, at: .zero)
        decision = machine.decide(.valid, at: .zero)
        guard case .fail(let error) = decision else {
            Issue.record("expected the bounded error, got \(Self.describe(decision))")
            return
        }
        #expect(error.code == .excessiveRefresh)
        #expect(error.message.contains("had already expired when they arrived"), "\(error.message)")
    }
}
