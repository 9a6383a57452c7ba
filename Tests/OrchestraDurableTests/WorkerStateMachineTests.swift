import Foundation
import TestSupport
import Testing

@testable import OrchestraDurable

/// The worker loop's decisions alone: no store, no clock, no task. Each case feeds the machine
/// events and inputs in order, and checks the action each event returns.
@Suite("WorkerStateMachine", .takesTurns)
struct WorkerStateMachineTests {
    /// What happens to the machine, at a time in seconds after `epoch`.
    enum Step: CustomStringConvertible {
        /// The loop starts, or its wait ended (an input came, or its time): `next(now:)`.
        case next(at: Double)
        /// The store call of a settle returned these jobs claimed.
        case claimed([String], at: Double)
        /// The store's outlook.
        case looked(Outlook, at: Double)
        /// The leases were renewed.
        case renewed(at: Double)
        /// A store call threw.
        case storeFailed
        /// Inputs from other tasks: they return no action.
        case ended(String)
        /// An attempt ended with an output of 10 MB (an HTTP job's large response).
        case endedLarge(String)
        case signal
        case stop(at: Double)

        var description: String {
            switch self {
            case .next(let at): "next at t+\(Int(at))"
            case .claimed(let ids, let at): "claimed \(ids) at t+\(Int(at))"
            case .looked(let outlook, let at): "looked \(outlook) at t+\(Int(at))"
            case .renewed(let at): "renewed at t+\(Int(at))"
            case .storeFailed: "store failed"
            case .ended(let id): "\(id) ended"
            case .endedLarge(let id): "\(id) ended with 10 MB"
            case .signal: "signal"
            case .stop(let at): "stop at t+\(Int(at))"
            }
        }
    }

    /// The store's outlook, short.
    enum Outlook {
        case noRunLeft
        case due(Double)
        case openRun
        case unclaimable
        case stuck

        var value: WorkOutlook {
            switch self {
            case .noRunLeft: WorkOutlook(hasUnfinishedRuns: false, hasOpenRuns: false, nextDueTime: nil)
            case .due(let at):
                WorkOutlook(hasUnfinishedRuns: true, hasOpenRuns: false, nextDueTime: date(at))
            case .openRun: WorkOutlook(hasUnfinishedRuns: true, hasOpenRuns: true, nextDueTime: nil)
            case .unclaimable:
                WorkOutlook(
                    hasUnfinishedRuns: true, hasOpenRuns: false, nextDueTime: nil,
                    unclaimable: (JobKey(runID: "r", jobID: "x"), "other"))
            case .stuck: WorkOutlook(hasUnfinishedRuns: true, hasOpenRuns: false, nextDueTime: nil)
            }
        }
    }

    /// The modes of a worker.
    enum Mode: String, CustomStringConvertible {
        /// `drain()` on a store of its own (SQLite).
        case drainPrivate
        /// `drain()` on a shared store that notifies and is polled every 5 s.
        case drainShared
        /// `drain()` on a shared store that only notifies (no poll interval).
        case drainNotified
        /// `work(until:)` on a store of its own.
        case workPrivate
        /// `work(until:)` on a shared store polled every 5 s.
        case workShared

        var description: String { rawValue }

        /// Limit 2, leases renewed every 20 s, a grace period of 10 s.
        func policy(gracePeriod: Duration = .seconds(10)) -> WorkerStateMachine.Policy {
            let shared = self == .drainShared || self == .drainNotified || self == .workShared
            return .init(
                limit: 2, kinds: ["add", "wait"], stopsWhenIdle: self != .workPrivate && self != .workShared,
                isShared: shared, pollInterval: shared && self != .drainNotified ? .seconds(5) : nil,
                renewalInterval: .seconds(20), gracePeriod: gracePeriod)
        }
    }

    static func date(_ seconds: Double) -> Date { epoch.addingTimeInterval(seconds) }

    static func key(_ id: String) -> JobKey { JobKey(runID: "r", jobID: id) }

    static func outcome(_ id: String, output: Data = Data()) -> AttemptOutcome {
        AttemptOutcome(
            job: ClaimedJob(
                key: key(id), kind: "add", input: Data(), attempt: 1, dependencyOutputs: [:], timeout: nil,
                retry: .never),
            outcome: .succeeded(output))
    }

    /// An action, short: `claim 2`, `settle [a] claim 1`, `wait until t+20`, `fail unknownJobKind`.
    static func summary(_ action: WorkerStateMachine.Action) -> String {
        func ids(_ keys: [JobKey]) -> String { "[" + keys.map(\.jobID).joined(separator: ",") + "]" }
        func time(_ date: Date) -> String { "t+\(Int(date.timeIntervalSince(epoch).rounded()))" }
        switch action {
        case .settle(let outcomes, let claim):
            let claimed = claim.map { "claim \($0)" }
            guard !outcomes.isEmpty else { return claimed ?? "settle nothing" }
            return (["settle " + ids(outcomes.map(\.job.key))] + [claimed].compactMap { $0 }).joined(separator: " ")
        case .lookAhead(let after): return "look after \(time(after))"
        case .renewLeases(let keys): return "renew \(ids(keys))"
        case .giveBack(let outcomes, let leases):
            return "give back \(ids(leases))" + (outcomes.isEmpty ? "" : " recording \(ids(outcomes.map(\.job.key)))")
        case .wait(let date): return date.map { "wait until \(time($0))" } ?? "wait"
        case .finish: return "finish"
        case .fail(let error): return "fail \((error as? DurableError)?.code.description ?? "\(error)")"
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var modes: [Mode]
        var gracePeriod: Duration = .seconds(10)
        /// Each step, and the action it returns (`nil` for an input).
        var steps: [(Step, String?)]

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "records each outcome with the next claim, and a drain ends once no run is left",
            modes: [.drainPrivate, .drainShared, .drainNotified],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a", "b"], at: 0), "wait until t+20"),
                (.ended("a"), nil),
                (.next(at: 1), "settle [a] claim 1"),
                (.claimed([], at: 1), "wait until t+20"),
                (.ended("b"), nil),
                (.next(at: 2), "settle [b] claim 2"),
                (.claimed([], at: 2), "look after t+2"),
                (.looked(.noRunLeft, at: 2), "finish"),
            ]),
        Case(
            name:
                "outcomes with large outputs are recorded a few at a time (16 MB), one at least, one call after another",
            modes: [.drainPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a", "b"], at: 0), "wait until t+20"),
                (.endedLarge("a"), nil),
                (.endedLarge("b"), nil),
                (.next(at: 1), "settle [a] claim 2"),
                (.claimed([], at: 1), "settle [b]"),
                (.claimed([], at: 1), "look after t+1"),
            ]),
        Case(
            name: "a long-lived worker with no run left waits for a signal, and claims on it",
            modes: [.workPrivate],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.noRunLeft, at: 0), "wait"),
                (.signal, nil),
                (.next(at: 3), "claim 2"),
            ]),
        Case(
            name: "a long-lived worker on a shared store also polls",
            modes: [.workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.noRunLeft, at: 1), "wait until t+6"),
                (.next(at: 6), "claim 2"),
            ]),
        Case(
            name: "a retry due later: a store of its own waits for it alone",
            modes: [.drainPrivate, .workPrivate, .drainNotified],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.due(30), at: 0), "wait until t+30"),
                (.next(at: 30), "claim 2"),
            ]),
        Case(
            name: "a retry due later: a polled shared store looks again at its poll interval first",
            modes: [.drainShared, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.due(30), at: 0), "wait until t+5"),
                (.next(at: 4), "wait until t+5"),
                (.next(at: 5), "claim 2"),
                (.claimed([], at: 5), "look after t+5"),
            ]),
        Case(
            name: "a drain on its own store waits for an open run's jobs, which come with a signal",
            modes: [.drainPrivate],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.openRun, at: 0), "wait"),
                (.signal, nil),
                (.next(at: 0), "claim 2"),
            ]),
        Case(
            name: "on its own store, a job of a kind with no handler is an error",
            modes: [.drainPrivate],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.unclaimable, at: 0), "fail unknownJobKind"),
                (.next(at: 1), "finish"),
            ]),
        Case(
            name: "on its own store, jobs that can never become ready are an error, not a wait forever",
            modes: [.drainPrivate],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.stuck, at: 0), "fail storeFailed"),
            ]),
        Case(
            name: "on a shared store, such jobs are left to other workers: it waits",
            modes: [.drainNotified],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.unclaimable, at: 0), "wait"),
                (.signal, nil),
                (.next(at: 2), "claim 2"),
            ]),
        Case(
            name: "a signal while the store is asked: it claims again rather than ends",
            modes: [.drainPrivate, .drainShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.signal, nil),
                (.looked(.noRunLeft, at: 0), "claim 2"),
            ]),
        Case(
            name: "with a slot free, a signal claims more while attempts run; with none, it waits",
            modes: [.drainPrivate, .drainShared, .workPrivate],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a"], at: 0), "wait until t+20"),
                (.signal, nil),
                (.next(at: 1), "claim 1"),
                (.claimed(["b"], at: 1), "wait until t+20"),
                (.signal, nil),
                (.next(at: 2), "wait until t+20"),
            ]),
        Case(
            name: "leases are renewed every interval while one is held, outcomes waiting included",
            modes: [.drainPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a", "b"], at: 0), "wait until t+20"),
                (.next(at: 20), "renew [a,b]"),
                (.renewed(at: 20), "wait until t+40"),
                (.ended("b"), nil),
                (.next(at: 40), "renew [a,b]"),
                (.renewed(at: 40), "settle [b] claim 1"),
                (.claimed([], at: 40), "wait until t+60"),
                (.ended("a"), nil),
                (.next(at: 41), "settle [a] claim 2"),
                // The renewal keeps its time: the next one renews the new lease too.
                (.claimed(["c"], at: 41), "wait until t+60"),
            ]),
        Case(
            name: "an attempt that ends before its claim is settled is not left running",
            modes: [.drainPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.ended("a"), nil),
                (.claimed(["a", "b"], at: 0), "settle [a] claim 1"),
                (.claimed([], at: 0), "wait until t+20"),
                (.ended("b"), nil),
                (.next(at: 1), "settle [b] claim 2"),
                (.claimed([], at: 1), "look after t+1"),
            ]),
        Case(
            name: "a deadline reached to within a millisecond is reached: no wait for it again at once",
            modes: [.drainPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a"], at: 0), "wait until t+20"),
                (.next(at: 19.9995), "renew [a]"),
                (.renewed(at: 19.9995), "wait until t+40"),
            ]),
        Case(
            name: "a stop lets running attempts end within the grace period and claims no more",
            modes: [.workPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a", "b"], at: 0), "wait until t+20"),
                (.stop(at: 5), nil),
                (.next(at: 5), "wait until t+15"),
                (.ended("a"), nil),
                (.signal, nil),
                (.next(at: 6), "settle [a]"),
                (.claimed([], at: 6), "wait until t+15"),
                (.ended("b"), nil),
                (.next(at: 7), "settle [b]"),
                (.claimed([], at: 7), "finish"),
            ]),
        Case(
            name: "once the grace period is over, what ended is recorded and the rest given back",
            modes: [.workPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a", "b"], at: 0), "wait until t+20"),
                (.stop(at: 5), nil),
                (.next(at: 5), "wait until t+15"),
                (.stop(at: 9), nil),
                (.next(at: 9), "wait until t+15"),
                (.ended("a"), nil),
                (.next(at: 15), "give back [b] recording [a]"),
                (.ended("b"), nil),
                (.next(at: 16), "finish"),
            ]),
        Case(
            name: "with no grace period, a stop gives back every lease at once",
            modes: [.workPrivate],
            gracePeriod: .zero,
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a", "b"], at: 0), "wait until t+20"),
                (.stop(at: 5), nil),
                (.next(at: 5), "give back [a,b]"),
            ]),
        Case(
            name: "a stop while idle, or before the start, ends at once",
            modes: [.workPrivate, .workShared],
            steps: [
                (.stop(at: 0), nil),
                (.next(at: 0), "finish"),
            ]),
        Case(
            name: "a stop while idle ends the wait and the worker",
            modes: [.workPrivate],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed([], at: 0), "look after t+0"),
                (.looked(.noRunLeft, at: 0), "wait"),
                (.stop(at: 3), nil),
                (.next(at: 3), "finish"),
            ]),
        Case(
            name: "a store error ends the worker; attempts ending after it are not recorded",
            modes: [.drainPrivate, .workShared],
            steps: [
                (.next(at: 0), "claim 2"),
                (.claimed(["a"], at: 0), "wait until t+20"),
                (.next(at: 20), "renew [a]"),
                (.storeFailed, "fail connectionFailed"),
                (.ended("a"), nil),
                (.next(at: 21), "finish"),
            ]),
    ]

    @Test(arguments: cases) func decides(_ scenario: Case) {
        for mode in scenario.modes {
            var machine = WorkerStateMachine(policy: mode.policy(gracePeriod: scenario.gracePeriod))
            for (index, (step, expected)) in scenario.steps.enumerated() {
                var action: WorkerStateMachine.Action?
                switch step {
                case .next(let at): action = machine.next(now: Self.date(at))
                case .claimed(let ids, let at): action = machine.settled(claimed: ids.map(Self.key), now: Self.date(at))
                case .looked(let outlook, let at): action = machine.lookedAhead(outlook.value, now: Self.date(at))
                case .renewed(let at): action = machine.renewed(now: Self.date(at))
                case .storeFailed:
                    action = machine.storeFailed(DurableError(code: .connectionFailed, message: "the server is gone"))
                case .ended(let id): machine.attemptEnded(Self.outcome(id))
                case .endedLarge(let id): machine.attemptEnded(Self.outcome(id, output: Data(count: 10 << 20)))
                case .signal: machine.workSignalled()
                case .stop(let at): machine.stopRequested(at: Self.date(at))
                }
                #expect(
                    action.map(Self.summary) == expected, "\(mode), step \(index + 1) (\(step))")
            }
        }
    }

    @Test func anInputWakesTheWaitOnceAndANextActionTakesTheNotice() {
        var machine = WorkerStateMachine(policy: Mode.workPrivate.policy())
        #expect(machine.takeWakeUp() == nil)
        machine.workSignalled()
        machine.stopRequested(at: Self.date(0))
        #expect(machine.takeWakeUp() == true)
        #expect(machine.takeWakeUp() == nil, "one notice for the inputs that came meanwhile")
        machine.workSignalled()
        _ = machine.next(now: Self.date(0))
        #expect(machine.takeWakeUp() == nil, "the decision saw the input already")
    }

    @Test func aLargeLimitClaimsEveryFreeSlotAndGivesBackOnlyTheAttemptsStillRunning() {
        // 10,000 slots: 100x a usual limit.
        var policy = Mode.workPrivate.policy()
        policy.limit = 10_000
        var machine = WorkerStateMachine(policy: policy)
        #expect(Self.summary(machine.next(now: Self.date(0))) == "claim 10000")
        let ids = (0..<10_000).map { "j\($0)" }
        _ = machine.settled(claimed: ids.map(Self.key), now: Self.date(0))
        for id in ids.prefix(9_998) { machine.attemptEnded(Self.outcome(id)) }
        machine.stopRequested(at: Self.date(1))
        guard case .giveBack(let outcomes, let leases) = machine.next(now: Self.date(11)) else {
            Issue.record("expected a give-back")
            return
        }
        #expect(outcomes.count == 9_998)
        #expect(leases.map(\.jobID) == ["j9998", "j9999"])
    }
}
