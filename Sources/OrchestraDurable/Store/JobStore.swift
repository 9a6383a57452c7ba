import Foundation
import Orchestra

/// Where durable runs live: their jobs, states, attempts, leases and outputs.
///
/// Every method is one transaction. A store guarantees that an outcome is recorded once: an
/// outcome for an attempt that is no longer the job's current one (its lease expired and
/// another worker claimed it, or the run was cancelled) is refused, not recorded.
///
/// ``SQLiteJobStore`` keeps them in one SQLite file. The protocol is what a ``DurableQueue``
/// needs, so another database can hold them too.
public protocol JobStore: Sendable {
    /// Stores a new run, its jobs ready or blocked. Submitting the same graph under the same id
    /// again stores nothing and returns `false`.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/runIDInUse``) if a run with this id
    ///   has other jobs.
    func submit(_ run: DurableSubmission) async throws -> Bool

    /// Adds the jobs of `jobs.graph` to the open run `jobs.runID` (one submitted with
    /// ``DurableSubmission/isOpen``), ready or blocked on each other; its limits, failure policy
    /// and `isOpen` are the run's already and are not read. A job whose id the run has already,
    /// with the same kind and input, is left as it is (appending again after a restart adds
    /// nothing twice).
    ///
    /// - Returns: How many jobs were added.
    /// - Throws: ``DurableError``: ``DurableError/Code/unknownRun``,
    ///   ``DurableError/Code/runClosed`` (the run is not open, or it ended),
    ///   ``DurableError/Code/runIDInUse`` (a job id the run has with another kind or input),
    ///   ``DurableError/Code/invalidGraph`` (a resource the run has no limit for).
    func append(_ jobs: DurableSubmission) async throws -> Int

    /// Closes the open run `runID` to more jobs: it ends as soon as its jobs have (at once if
    /// they have), succeeded if every one did. Closing a run that is not open does nothing.
    ///
    /// - Returns: The run's state if it ended now.
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``).
    func close(runID: String, now: Date) async throws -> DurableRunState?

    /// The jobs of run `runID` with these ids (those it has), in the order they were added.
    func jobs(of runID: String, ids: [String]) async throws -> [DurableJobRecord]

    /// Claims up to `limit` jobs that are ready and due at `now` (or running under a lease that
    /// expired before `now`), highest priority first, within each run's limit: each is marked
    /// running for `worker` until `leaseExpiry`, its attempt counted.
    /// Only jobs of `kinds` are claimed: a worker never takes a job it has no handler for.
    func claim(
        worker: String, kinds: Set<String>, limit: Int, now: Date, leaseExpiry: Date
    ) async throws -> [ClaimedJob]

    /// Records how attempts ended, then claims jobs as ``claim(worker:kinds:limit:now:leaseExpiry:)``
    /// does if `claim` is given: a worker settles the jobs that ended and takes the next ones in
    /// one call. ``SQLiteJobStore`` does both in one transaction; a store shared by many
    /// processes may use two (the outcomes' first), as long as each outcome's own rules below
    /// hold.
    ///
    /// Each outcome is recorded in the same transaction that releases the job's dependents (or
    /// skips them), schedules its retry, and ends the run if it was its last job.
    ///
    /// - Returns: For each outcome, whether it was recorded (`false` for an attempt that is no
    ///   longer current) and the run's state if it ended the run; and the jobs claimed.
    func record(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob])

    /// Extends to `expiry` the leases `worker` holds on `jobs` (those still running under its
    /// lease; a job it lost is left alone).
    func renewLeases(of jobs: [JobKey], worker: String, until expiry: Date) async throws

    /// Gives back the leases `worker` holds on `jobs` (those still running under its lease): each
    /// becomes claimable at `now`, as if its lease had expired, its attempt counted. A worker
    /// that stops gracefully calls it for the jobs it did not finish. The default renews the
    /// leases until `now`; a shared store also wakes its idle workers.
    func releaseLeases(of jobs: [JobKey], worker: String, now: Date) async throws

    /// Removes the runs that ended before `date`, with their jobs.
    ///
    /// - Returns: How many runs were removed.
    func removeRuns(endedBefore date: Date) async throws -> Int

    /// Cancels every job of the run that has not ended, and the run.
    ///
    /// - Returns: `false` if the run had already ended.
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``).
    func cancel(runID: String, now: Date) async throws -> Bool

    /// The run, or `nil` if there is none with this id.
    func run(_ runID: String) async throws -> DurableRunRecord?

    /// The run's jobs, in the order they were submitted.
    func jobs(of runID: String) async throws -> [DurableJobRecord]

    /// The earliest time after `now` at which a job becomes claimable (a retry's time, or a
    /// lease's expiry), if any.
    func nextDueTime(after now: Date) async throws -> Date?

    /// Whether some run has not ended.
    func hasUnfinishedRuns() async throws -> Bool

    /// Whether some run that has not ended is open for more jobs (``DurableSubmission/isOpen``):
    /// a worker with nothing to do waits for its jobs rather than stopping.
    func hasOpenRuns() async throws -> Bool

    /// A job of an unfinished run that is ready but whose kind is not in `kinds` (no worker of
    /// this queue can run it), if any.
    func readyJob(notOf kinds: Set<String>) async throws -> (key: JobKey, kind: String)?

    /// For a store other processes use too: calls `onWork` whenever one of them may have made
    /// jobs claimable (a run submitted, dependents released), until the calling task is
    /// cancelled. An idle worker waits for this instead of its next due time alone. The
    /// default, for a store only this process uses, returns at once.
    func listenForWork(_ onWork: @escaping @Sendable () -> Void) async throws

    /// As ``listenForWork(_:)``, but leaves out the notifications of `worker`'s own outcomes
    /// (``record(_:thenClaim:now:)`` with a claim for `worker`): that worker claims right after
    /// recording, and a notification of its own would only wake it for a claim that finds
    /// nothing. The default listens to every notification.
    func listenForWork(ignoring worker: String, _ onWork: @escaping @Sendable () -> Void) async throws

    /// For a store other processes use too: calls `onOutcome` whenever one of them may have
    /// recorded the outcome of a job of an open run, until the calling task is cancelled; a
    /// process waiting for those outcomes (``DurableQueue/withOutcomes(of:_:)``) looks again.
    /// The default returns at once.
    func listenForOutcomes(_ onOutcome: @escaping @Sendable () -> Void) async throws

    /// Whether other processes may use the store at the same time (`false` by default). A
    /// worker on a shared store that finds nothing it can run waits for notifications, its next
    /// due time or ``pollInterval``, whichever comes first: another worker may release jobs,
    /// or run the kinds it has no handler for. On a store of its own it stops with an error
    /// instead, since nothing could change.
    var isShared: Bool { get }

    /// For a shared store: how long an idle worker waits at most before it looks for work
    /// again, should a notification have been lost; `nil` waits for notifications and due
    /// times only. `nil` by default.
    var pollInterval: Duration? { get }
}

extension JobStore {
    public func listenForOutcomes(_ onOutcome: @escaping @Sendable () -> Void) async throws {}

    public func listenForWork(ignoring worker: String, _ onWork: @escaping @Sendable () -> Void) async throws {
        try await listenForWork(onWork)
    }

    public func releaseLeases(of jobs: [JobKey], worker: String, now: Date) async throws {
        try await renewLeases(of: jobs, worker: worker, until: now)
    }

    public func listenForWork(_ onWork: @escaping @Sendable () -> Void) async throws {}

    public var isShared: Bool { false }

    public var pollInterval: Duration? { nil }
}

/// A run as it is submitted to a store.
public struct DurableSubmission: Sendable {
    /// The run's id, chosen by the caller.
    public var runID: String
    /// How many of its jobs may run at once.
    public var limit: Int
    /// How many of its jobs may use each named resource at once.
    public var resourceLimits: [String: Int]
    /// What a failed job does to the others.
    public var failurePolicy: FailurePolicy
    /// Its jobs, checked.
    public var graph: DurableGraph
    /// Each job's longest remaining path, in the graph's order: jobs ready at once start in
    /// decreasing order of it, within a priority.
    public var criticalPaths: [Double]
    /// When it is submitted.
    public var now: Date
    /// Whether the run stays open for more jobs (``JobStore/append(_:)``) until it is closed
    /// (``JobStore/close(runID:now:)``): it does not end when its jobs have, before that.
    public var isOpen = false

    /// Checks, for jobs appended to a run, that each resource a job uses is one of the run's
    /// `limited` ones.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/invalidGraph``) naming the first job
    ///   and resource that is not.
    package func checkResources(limitedIn limited: Set<String>) throws(DurableError) {
        for job in graph.jobs {
            if let unknown = job.options.resources.first(where: { !limited.contains($0) }) {
                throw DurableError.unknownResource(unknown, job: job.id, run: runID)
            }
        }
    }

    /// A digest of the jobs, their inputs, dependencies and options: submitting the same id
    /// again is idempotent only when it matches.
    package var fingerprint: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) {
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            hash ^= 0xff
            hash = hash &* 0x100_0000_01b3
        }
        mix(String(limit).utf8)
        for (name, limit) in resourceLimits.sorted(by: { $0.key < $1.key }) { mix("\(name)=\(limit)".utf8) }
        mix((failurePolicy == .failFast ? "failFast" : "cancelDependents").utf8)
        if isOpen { mix("open".utf8) }
        for job in graph.jobs {
            mix(job.id.utf8)
            mix(job.kind.utf8)
            mix(job.input)
            for dependency in job.dependencies { mix(dependency.utf8) }
            for resource in job.options.resources { mix(resource.utf8) }
            mix(
                "\(job.options.priority)/\(job.options.cost)/\(String(describing: job.options.timeout))/\(job.options.retry)"
                    .utf8)
        }
        return String(hash, radix: 16)
    }
}

/// How one attempt of a claimed job ended.
public struct AttemptOutcome: Sendable {
    /// The job, as it was claimed (its attempt number says which attempt this is).
    public var job: ClaimedJob
    /// How the attempt ended.
    public var outcome: JobOutcome

    /// The outcome of `job`'s attempt.
    public init(job: ClaimedJob, outcome: JobOutcome) {
        self.job = job
        self.outcome = outcome
    }
}

/// What a worker asks to claim: see ``JobStore/claim(worker:kinds:limit:now:leaseExpiry:)``.
public struct Claim: Sendable {
    /// The worker the leases are for.
    public var worker: String
    /// The kinds it has handlers for.
    public var kinds: Set<String>
    /// At most this many jobs.
    public var limit: Int
    /// The time of the claim.
    public var now: Date
    /// When the leases expire.
    public var leaseExpiry: Date

    /// A claim of up to `limit` jobs of `kinds` for `worker`.
    public init(worker: String, kinds: Set<String>, limit: Int, now: Date, leaseExpiry: Date) {
        self.worker = worker
        self.kinds = kinds
        self.limit = limit
        self.now = now
        self.leaseExpiry = leaseExpiry
    }
}

/// A job and the run it belongs to.
public struct JobKey: Sendable, Hashable {
    /// The run's id.
    public var runID: String
    /// The job's id in the run.
    public var jobID: String

    package init(runID: String, jobID: String) {
        self.runID = runID
        self.jobID = jobID
    }
}

/// A job a worker claimed: what its handler needs.
public struct ClaimedJob: Sendable {
    /// Which job.
    public var key: JobKey
    /// Its kind's name.
    public var kind: String
    /// Its input, as JSON.
    public var input: Data
    /// This attempt's number (1 for the first).
    public var attempt: Int
    /// The outputs of its dependencies, by id, as JSON.
    public var dependencyOutputs: [String: Data]
    /// Its time limit per attempt.
    public var timeout: Duration?
    /// Its retries: how many attempts, and the wait before the next.
    public var retry: DurableRetry

    package init(
        key: JobKey, kind: String, input: Data, attempt: Int, dependencyOutputs: [String: Data],
        timeout: Duration?, retry: DurableRetry
    ) {
        self.key = key
        self.kind = kind
        self.input = input
        self.attempt = attempt
        self.dependencyOutputs = dependencyOutputs
        self.timeout = timeout
        self.retry = retry
    }
}

/// How an attempt ended.
public enum JobOutcome: Sendable {
    /// With this output, as JSON.
    case succeeded(Data)
    /// With this error; `retryAt` is when to try again, `nil` when it is not retried.
    case failed(String, retryAt: Date?)
}

/// What recording an outcome did.
public struct RecordedOutcome: Sendable, Hashable {
    /// Whether the outcome was recorded (`false`: the attempt was no longer current).
    public var recorded: Bool
    /// The run's state, if this outcome ended the run.
    public var runEnded: DurableRunState?

    package init(recorded: Bool, runEnded: DurableRunState?) {
        self.recorded = recorded
        self.runEnded = runEnded
    }
}
