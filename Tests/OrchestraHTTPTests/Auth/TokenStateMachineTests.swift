import Orchestra
@testable import OrchestraHTTP
import Testing

/// The state machine alone: decisions as text, times as offsets.
@Suite("TokenRefresher: state machine", .timeLimit(.minutes(1)))
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
        _ machine: inout TokenStateMachine, _ decision: TokenStateMachine.Decision, to value: String, lifetime: Duration?, at now: Duration
    ) -> SignedToken? {
        guard case .refresh(let version) = decision, case .proceed = machine.beginRefresh(fromVersion: version, at: now) else { return nil }
        return machine.refreshSucceeded(fromVersion: version, newToken: AuthToken(value, lifetime: lifetime), at: now)
    }

    @Test(arguments: LifetimeCase.all)
    func renewalsAtTheScaledMarginNeverFail(_ lifetimeCase: LifetimeCase) {
        var machine = TokenStateMachine(token: AuthToken("t0", lifetime: lifetimeCase.lifetime), margin: .seconds(30), maxRefreshes: 5, window: .seconds(60))
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "use t0 v0")
        var now = Duration.zero
        for round in 1...100 {
            #expect(Self.describe(machine.decide(.valid, at: now + lifetimeCase.due - .nanoseconds(1))) == "use t\(round - 1) v\(round - 1)")
            now += lifetimeCase.due
            let decision = machine.decide(.valid, at: now)
            #expect(Self.describe(decision) == "refresh v\(round - 1)")
            let fresh = Self.refresh(&machine, decision, to: "t\(round)", lifetime: lifetimeCase.lifetime, at: now)
            #expect(fresh == SignedToken(value: "t\(round)", version: round))
            #expect(Self.describe(machine.decide(.valid, at: now)) == "use t\(round) v\(round)", "a fresh token is used")
        }
        #expect(machine.refreshCount == 100)
    }

    @Test func rejectionsAreCountedInTheWindowAndTheMessageSaysSo() {
        var machine = TokenStateMachine(token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 2, window: .seconds(60))
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
        #expect(error.message == "the server rejected 2 fresh tokens and 1 older one: stopped after 2 such refreshes in the last 60.0 seconds (at most 2 allowed) instead of refreshing again")
        // Final for that version; a new login starts afresh.
        #expect(Self.describe(machine.decide(.valid, at: .seconds(3))) == "fail excessiveRefresh")
        machine.reset(to: AuthToken("again"), at: .seconds(4))
        #expect(Self.describe(machine.decide(.replacing(version: 3), at: .seconds(4))) == "refresh v3")
    }

    @Test func aCallerThatNeedsTheRefreshInFlightJoinsItEvenAtTheLimit() {
        var machine = TokenStateMachine(token: AuthToken("t0"), margin: .seconds(30), maxRefreshes: 1, window: .seconds(60))
        let decision = machine.decide(.replacing(version: 0), at: .zero)
        #expect(Self.describe(decision) == "refresh v0")
        guard case .proceed = machine.beginRefresh(fromVersion: 0, at: .zero) else {
            Issue.record("the refresh should run")
            return
        }
        // While it runs, the limit is reached, but this refresh is already counted: join it.
        #expect(Self.describe(machine.decide(.valid, at: .zero)) == "refresh v0")
        #expect(Self.describe(machine.decide(.replacing(version: 0), at: .zero)) == "refresh v0")
        #expect(machine.refreshSucceeded(fromVersion: 0, newToken: AuthToken("t1"), at: .zero) == SignedToken(value: "t1", version: 1))
        #expect(Self.describe(machine.decide(.replacing(version: 1), at: .zero)) == "fail excessiveRefresh")
    }
}
