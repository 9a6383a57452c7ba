import Foundation

/// How the workers of a ``DurableQueue`` learn that another process changed their store: made
/// jobs claimable (a run submitted, dependents released, leases given back) or recorded
/// outcomes someone waits for. Each ``JobStore`` says which it offers
/// (``JobStore/workSignal``); the queue's workers and ``DurableQueue/withOutcomes(of:_:)`` wait
/// accordingly.
///
/// ```swift
/// extension MyJobStore {
///     var workSignal: WorkSignal { .polling(every: .seconds(1)) }          // shared, no notifications
/// }
/// extension PostgresJobStore {
///     var workSignal: WorkSignal { .notifications(self, pollingEvery: pollInterval) }   // LISTEN/NOTIFY
/// }
/// ```
///
/// The rule: a store other processes write to must not say ``inProcess``. *Why:* a worker on a
/// store of its own that finds nothing it can run knows nothing will change, and stops with an
/// error (a job of a kind it has no handler for, jobs that can never become ready); on a shared
/// store it waits, since another worker may have that handler or release those jobs. *If you
/// break it:* a worker stops with an error while other processes still have work for it, and a
/// process waiting for outcomes other processes record waits forever.
public struct WorkSignal: Sendable {
    private enum Source: Sendable {
        case inProcess
        case polling(Duration)
        case notifications(any WorkNotifications, pollInterval: Duration?)
    }

    private let source: Source

    /// Only this process uses the store: every change comes through its queues, which wake
    /// their own workers. What ``SQLiteJobStore`` says.
    public static var inProcess: WorkSignal { WorkSignal(source: .inProcess) }

    /// Other processes share the store and nothing tells this one when they change it: an idle
    /// worker claims again every `interval` (and at its next due time), and a process waiting
    /// for outcomes looks again as often.
    ///
    /// - Parameter interval: At least a millisecond; shorter is taken as a millisecond.
    public static func polling(every interval: Duration) -> WorkSignal {
        WorkSignal(source: .polling(max(interval, .milliseconds(1))))
    }

    /// Other processes share the store, and `notifications` tells this one as soon as they
    /// change it. An idle worker also claims again every `interval`, should a notification
    /// have been lost (a connection dropped, the server restarted); `nil` waits for
    /// notifications and due times alone (tests on a manual clock).
    public static func notifications(
        _ notifications: some WorkNotifications, pollingEvery interval: Duration?
    ) -> WorkSignal {
        WorkSignal(source: .notifications(notifications, pollInterval: interval.map { max($0, .milliseconds(1)) }))
    }

    /// Whether other processes may use the store at the same time.
    public var isShared: Bool {
        if case .inProcess = source { return false }
        return true
    }

    /// How long an idle worker on a shared store waits at most before it claims again; `nil`
    /// when it waits for notifications and due times only (or the store is not shared).
    public var pollInterval: Duration? {
        switch source {
        case .inProcess: nil
        case .polling(let interval): interval
        case .notifications(_, let interval): interval
        }
    }

    /// Calls `onWork` whenever another process may have made jobs claimable, leaving out the
    /// work released by `worker`'s own outcomes, until the calling task is cancelled. Returns
    /// at once when the store sends no notifications.
    func listenForWork(ignoring worker: String, _ onWork: @escaping @Sendable () -> Void) async throws {
        guard case .notifications(let notifications, _) = source else { return }
        try await notifications.listenForWork(ignoring: worker, onWork)
    }

    /// Calls `onOutcome` whenever another process may have recorded an outcome of a job of an
    /// open run, with what it knows of it, until the calling task is cancelled. Returns at once
    /// when the store sends no notifications.
    func listenForOutcomes(_ onOutcome: @escaping @Sendable (OutcomeNotice) -> Void) async throws {
        guard case .notifications(let notifications, _) = source else { return }
        try await notifications.listenForOutcomes(onOutcome)
    }
}

/// What tells the processes sharing a store that one of them changed it, for
/// ``WorkSignal/notifications(_:pollingEvery:)``: `PostgresJobStore` listens (`LISTEN`) on its
/// channels.
///
/// Each method calls its closure for every notification until the calling task is cancelled,
/// and once when listening begins (so that what happened before is looked for then). It
/// connects again by itself after a lost connection; meanwhile the idle workers poll.
public protocol WorkNotifications: Sendable {
    /// Calls `onWork` whenever another process may have made jobs claimable (a run submitted,
    /// dependents released, leases given back), but not for the work released by the outcomes
    /// `worker` records: that worker claims right after recording them, and a notification of
    /// its own would only wake it for a claim that finds nothing.
    func listenForWork(ignoring worker: String, _ onWork: @escaping @Sendable () -> Void) async throws

    /// Calls `onOutcome` whenever another process may have recorded the outcome of a job of an
    /// open run: a process waiting for those outcomes (``DurableQueue/withOutcomes(of:_:)``)
    /// looks again, for the jobs named (``OutcomeNotice/jobs(_:)``) or for all it waits for
    /// (``OutcomeNotice/any``: when listening begins, and whenever the store cannot say which).
    func listenForOutcomes(_ onOutcome: @escaping @Sendable (OutcomeNotice) -> Void) async throws
}

/// What a notification of outcomes tells a process that waits for some
/// (``WorkNotifications/listenForOutcomes(_:)``).
///
/// The rule: ``jobs(_:)`` names *every* job that ended in the change it announces; a change that
/// ended jobs it cannot name (a failure that failed or skipped dependents, a run's end, a lease
/// that ran out) is ``any``. *Why:* a waiter looks only at the jobs named, so that each outcome
/// is read once rather than once for every notification while it is awaited. *If you break
/// it:* a waiter for a job left out misses its end until the store's poll interval (or
/// forever on a store without one).
public enum OutcomeNotice: Sendable, Hashable {
    /// These jobs ended, and no other job did in the same change.
    case jobs([JobKey])
    /// Any job may have ended: look at every one waited for.
    case any
}

/// What lies ahead for a worker that found nothing to claim, with nothing running: read by
/// ``JobStore/outlook(after:kinds:)`` in one transaction, so that its answers agree (a run that
/// ends between two looks is not taken for one that can never end).
public struct WorkOutlook: Sendable {
    /// Whether some run has not ended.
    public var hasUnfinishedRuns: Bool
    /// Whether some run that has not ended is open for more jobs (``DurableSubmission/isOpen``):
    /// a worker with nothing to do waits for its jobs rather than stopping.
    public var hasOpenRuns: Bool
    /// The earliest time after the one asked about at which a job becomes claimable (a retry's
    /// time, or a lease's expiry), if any.
    public var nextDueTime: Date?
    /// A job of an unfinished run that is ready but of none of the kinds asked about (no
    /// handler of the asking worker runs it), if any; looked for only when no job is due and no
    /// run is open (`nil` otherwise).
    public var unclaimable: (key: JobKey, kind: String)?

    /// An outlook with these answers.
    public init(
        hasUnfinishedRuns: Bool, hasOpenRuns: Bool, nextDueTime: Date?,
        unclaimable: (key: JobKey, kind: String)? = nil
    ) {
        self.hasUnfinishedRuns = hasUnfinishedRuns
        self.hasOpenRuns = hasOpenRuns
        self.nextDueTime = nextDueTime
        self.unclaimable = unclaimable
    }
}
