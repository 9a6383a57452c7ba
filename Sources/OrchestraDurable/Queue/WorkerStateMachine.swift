import Foundation

/// What a ``DurableQueue`` worker does next, as a pure state machine: no store, no clock, no
/// task. Its driver (``DurableQueue``'s work loop) feeds it events and performs the one action
/// it returns at a time, then feeds it that action's result.
///
/// Events, from the driver's own actions:
/// - ``settled(claimed:now:)``: the outcomes were recorded and these jobs claimed;
/// - ``lookedAhead(_:now:)``: what the store says lies ahead, after a claim found nothing;
/// - ``renewed(now:)``: the leases were renewed;
/// - ``next(now:)``: the driver's wait ended, because an input arrived or its time came (the
///   timer fired: a lease's renewal, the grace period's end, a due job, the poll interval);
/// - ``storeFailed(_:)``: an action's store call threw.
///
/// Inputs, from other tasks at any time (they change the state and ask the driver to look
/// again; they return no action): ``attemptEnded(_:)``, ``workSignalled()``,
/// ``stopRequested(at:)``.
///
/// Actions out (``Action``): settle outcomes and claim, look ahead, renew leases, give leases
/// back, wait until a time or an input, finish, fail.
///
/// The rules it keeps, for every mode (``Policy``):
/// - one store call at a time, and every outcome waiting is recorded in the call that claims
///   the next jobs (at most ``settleBytes`` of outputs a call: the rest in the calls that
///   follow at once);
/// - never more than `limit` attempts, and no claim once a stop is requested;
/// - while it holds a lease, it renews them all every `renewalInterval`;
/// - a stop lets the running attempts end for up to `gracePeriod`, then gives back the leases
///   of those still running;
/// - with nothing running and nothing claimable, a drain returns once no run is unfinished, and
///   on a store of its own fails rather than waits for what cannot happen (a job of a kind it
///   has no handler for, jobs that can never become ready); a shared store, or a long-lived
///   worker, waits for a signal, the next due time, or the poll interval.
struct WorkerStateMachine: Sendable {
    /// How the worker works: from ``DurableQueue/drain(limit:)`` or
    /// ``DurableQueue/work(limit:until:gracePeriod:)``, the store's ``WorkSignal`` and the
    /// queue's leases.
    struct Policy: Sendable, Hashable {
        /// At most this many attempts at once.
        var limit: Int
        /// The kinds it has handlers for (named when a job of another kind is left).
        var kinds: Set<String>
        /// `true` for a drain, which returns once no run is unfinished; `false` for a long-lived
        /// worker, which waits for new runs until it is stopped.
        var stopsWhenIdle: Bool
        /// Whether other processes share the store (``WorkSignal/isShared``).
        var isShared: Bool
        /// On a shared store, how long an idle worker waits at most before it claims again.
        var pollInterval: Duration?
        /// How often the leases held are renewed.
        var renewalInterval: Duration
        /// How long a stop lets running attempts end before their leases are given back.
        var gracePeriod: Duration
    }

    /// What the driver does next. It performs one at a time, and then calls the event that
    /// each names.
    enum Action: Sendable {
        /// Records these outcomes and, if `claim` is given, claims up to that many jobs, in one
        /// store call (``JobStore/record(_:thenClaim:now:)``); then ``settled(claimed:now:)``.
        case settle([AttemptOutcome], claim: Int?)
        /// Asks the store what lies ahead after the last claim's time
        /// (``JobStore/outlook(after:kinds:)``); then ``lookedAhead(_:now:)``.
        case lookAhead(after: Date)
        /// Extends these jobs' leases by a lease; then ``renewed(now:)``.
        case renewLeases([JobKey])
        /// The grace period is over: records these outcomes, gives back the leases of the
        /// attempts still running (`leases`) and cancels them. The worker is done.
        case giveBack([AttemptOutcome], leases: [JobKey])
        /// Waits until this time (if any) or the next input, whichever comes first; then
        /// ``next(now:)``.
        case wait(until: Date?)
        /// Cancels whatever still runs (nothing, unless the driver was cancelled) and returns.
        case finish
        /// Cancels the running attempts (their leases expire) and throws this error.
        case fail(any Error)
    }

    private enum Phase: Sendable {
        /// Free to decide.
        case ready
        /// An action's store call is under way: its event comes next.
        case busy
        /// Nothing runs here and nothing is claimable: waits for a signal, or until this time.
        case idle(until: Date?)
        /// Returned, or failed.
        case finished
    }

    let policy: Policy
    private var phase = Phase.ready
    /// The attempts running, whose leases are held.
    private var running: Set<JobKey> = []
    /// The attempts that ended and wait to be recorded (their leases still held).
    private var ended: [AttemptOutcome] = []
    /// Whether to claim at the next chance: at the start, after an attempt ended (a slot is
    /// free), a work signal, an idle wait's time.
    private var wantsClaim = true
    /// Whether the last claim found nothing while nothing runs: the store is asked next.
    private var needsLook = false
    /// The time of the last claim: a job due since is not "nothing claimable".
    private var claimedAt: Date?
    /// When the stop's grace period ends, once a stop is requested.
    private var graceDeadline: Date?
    /// When the held leases are renewed next; `nil` while none is held.
    private var nextRenewal: Date?
    /// When a job held back by its resource's rate or a pause may be claimed, as the last claim
    /// said: a worker with room claims again then, not only when one of its attempts ends.
    private var nextRelease: Date?
    /// Whether the settle under way claims: only a claim's answer replaces ``nextRelease``.
    private var claiming = false
    /// An input arrived that the driver has not looked at: its wait ends.
    private var woken = false

    init(policy: Policy) {
        self.policy = policy
    }

    /// The jobs whose leases the worker holds: running, or ended and not recorded yet.
    private var held: [JobKey] {
        (Array(running) + ended.map(\.job.key)).sorted { ($0.runID, $0.jobID) < ($1.runID, $1.jobID) }
    }

    // MARK: - Inputs (any task, any time)

    /// An attempt returned: its outcome waits to be recorded, and its slot is free.
    mutating func attemptEnded(_ outcome: AttemptOutcome) {
        // After a give-back or a failure, nothing more is recorded.
        if case .finished = phase { return }
        running.remove(outcome.job.key)
        ended.append(outcome)
        wantsClaim = true
        woken = true
    }

    /// Jobs may have become claimable (a run submitted or appended through this queue, a run
    /// closed, or the store's notification of another process's work).
    mutating func workSignalled() {
        wantsClaim = true
        woken = true
    }

    /// A graceful stop was requested at `date`: claim nothing more; the grace period starts.
    /// Requesting it again does nothing.
    mutating func stopRequested(at date: Date) {
        if graceDeadline == nil { graceDeadline = date.addingTimeInterval(policy.gracePeriod.seconds) }
        woken = true
    }

    /// Takes the notice that an input arrived: `true` ends the driver's wait.
    mutating func takeWakeUp() -> Bool? {
        defer { woken = false }
        return woken ? true : nil
    }

    // MARK: - Events (the driver)

    /// The next action at `now`: at the start, and whenever the driver's wait ends.
    mutating func next(now: Date) -> Action {
        switch phase {
        case .finished: return .finish
        case .busy: preconditionFailure("WorkerStateMachine.next(now:) while an action is under way")
        case .ready, .idle: break
        }
        woken = false
        if let deadline = graceDeadline, Self.isReached(deadline, at: now), !running.isEmpty {
            phase = .finished
            let leases = held.filter { running.contains($0) }
            return .giveBack(takeEnded(), leases: leases)
        }
        if let renewal = nextRenewal, Self.isReached(renewal, at: now), !running.isEmpty || !ended.isEmpty {
            phase = .busy
            return .renewLeases(held)
        }
        if case .idle(let until?) = phase, Self.isReached(until, at: now) { wantsClaim = true }
        if let release = nextRelease, Self.isReached(release, at: now) {
            nextRelease = nil
            wantsClaim = true
        }
        let free = policy.limit - running.count
        let claim = graceDeadline == nil && wantsClaim && free > 0 ? free : nil
        if !ended.isEmpty || claim != nil {
            phase = .busy
            claiming = claim != nil
            if claim != nil {
                wantsClaim = false
                needsLook = false
                claimedAt = now
            }
            return .settle(takeEnded(upTo: Self.settleBytes), claim: claim)
        }
        if graceDeadline != nil {
            guard !running.isEmpty else {
                phase = .finished
                return .finish
            }
            return .wait(until: earliest(graceDeadline, nextRenewal))
        }
        if !running.isEmpty {
            let release = running.count < policy.limit ? nextRelease : nil
            return .wait(until: earliest(nextRenewal, release))
        }
        if needsLook {
            needsLook = false
            phase = .busy
            return .lookAhead(after: claimedAt ?? now)
        }
        if case .idle(let until) = phase { return .wait(until: until) }
        return .wait(until: nil)
    }

    /// The outcomes of ``Action/settle(_:claim:)`` were recorded and `claimed` claimed (the
    /// driver started them) at `now`; `nextRelease` is when a job held back by its resource's
    /// rate or a pause may be claimed (``ReleaseTimes``), if the claim said.
    mutating func settled(claimed: [JobKey], now: Date, nextRelease: Date? = nil) -> Action {
        guard case .busy = phase else { return next(now: now) }
        phase = .ready
        if claiming { self.nextRelease = nextRelease }
        claiming = false
        // An attempt that ended before this answer (the driver starts attempts after it, but
        // another driver may not) is not running: counted so, its slot would never be free.
        let endedKeys = Set(ended.map(\.job.key))
        running.formUnion(claimed.filter { !endedKeys.contains($0) })
        updateRenewal(now: now)
        if running.isEmpty && graceDeadline == nil { needsLook = true }
        return next(now: now)
    }

    /// The store's answer to ``Action/lookAhead(after:)``, read at `now`.
    mutating func lookedAhead(_ outlook: WorkOutlook, now: Date) -> Action {
        guard case .busy = phase else { return next(now: now) }
        phase = .ready
        // A signal while the store was asked (a run submitted meanwhile): claim again first.
        if wantsClaim || graceDeadline != nil || !running.isEmpty { return next(now: now) }
        if !outlook.hasUnfinishedRuns && policy.stopsWhenIdle {
            phase = .finished
            return .finish
        }
        let due = outlook.hasUnfinishedRuns ? outlook.nextDueTime : nil
        if policy.isShared || !policy.stopsWhenIdle {
            // Other processes' outcomes release jobs here too, and they may run the kinds this
            // worker has no handler for; a long-lived worker waits for new runs as well.
            let poll = policy.isShared ? policy.pollInterval.map { now.addingTimeInterval($0.seconds) } : nil
            phase = .idle(until: earliest(due, poll))
        } else if let due {
            phase = .idle(until: due)
        } else if outlook.hasOpenRuns {
            // Its next jobs, or its close, come through this queue, which signals.
            phase = .idle(until: nil)
        } else {
            phase = .finished
            if let orphan = outlook.unclaimable {
                return .fail(
                    DurableError(
                        code: .unknownJobKind,
                        message:
                            "job '\(orphan.key.jobID)' of run '\(orphan.key.runID)' is of kind '\(orphan.kind)', which has no handler on this queue (registered: \(policy.kinds.sorted().joined(separator: ", ")))"
                    ))
            }
            // Every job left is blocked, and none it waits for is running, ready or due: no
            // sequence of outcomes can release it. Never wait forever on that.
            return .fail(
                DurableError(
                    code: .storeFailed,
                    message:
                        "the store has unfinished runs whose jobs can never become ready (no job is running, ready or scheduled); it was changed outside Orchestra"
                ))
        }
        return next(now: now)
    }

    /// The leases of ``Action/renewLeases(_:)`` were renewed at `now`.
    mutating func renewed(now: Date) -> Action {
        guard case .busy = phase else { return next(now: now) }
        phase = .ready
        nextRenewal = nil
        updateRenewal(now: now)
        return next(now: now)
    }

    /// An action's store call threw: the worker fails with `error`.
    mutating func storeFailed(_ error: any Error) -> Action {
        phase = .finished
        return .fail(error)
    }

    // MARK: - Helpers

    /// The renewal is timed from the first lease held, and stops once none is.
    private mutating func updateRenewal(now: Date) {
        if running.isEmpty && ended.isEmpty {
            nextRenewal = nil
        } else if nextRenewal == nil {
            nextRenewal = now.addingTimeInterval(policy.renewalInterval.seconds)
        }
    }

    /// The outputs one settle records at most, in bytes (but always one outcome, whatever its
    /// size): the outcomes beyond wait for the next settle, which follows at once. Large
    /// outputs (an HTTP job's 60 MB response) in one transaction made it take longer than a
    /// store operation may (10 s on PostgreSQL), so it was given up and sent again whole, and a
    /// statement could outgrow PostgreSQL's 1 GB message limit.
    static let settleBytes = 16 << 20

    /// The ended outcomes, oldest first, whose outputs come to at most `budget` bytes (at
    /// least one; all of them by default); the others stay.
    private mutating func takeEnded(upTo budget: Int = .max) -> [AttemptOutcome] {
        var bytes = 0
        var count = 0
        for outcome in ended {
            let size = if case .succeeded(let output) = outcome.outcome { output.count } else { 0 }
            if count > 0, bytes + size > budget { break }
            bytes += size
            count += 1
        }
        defer { ended.removeFirst(count) }
        return Array(ended.prefix(count))
    }

    /// Whether `deadline` has come at `now`. Within a millisecond counts: the driver sleeps to
    /// the millisecond, and a date reached by two sums of seconds may differ in its last bits. A
    /// deadline missed by that would be waited for again at once: a spin, forever on a manual
    /// clock.
    private static func isReached(_ deadline: Date, at now: Date) -> Bool {
        deadline.timeIntervalSince(now) <= 0.001
    }

    private func earliest(_ first: Date?, _ second: Date?) -> Date? {
        [first, second].compactMap { $0 }.min()
    }
}
