import Foundation
import Orchestra

/// Where durable runs live: their jobs, states, attempts, leases and outputs.
///
/// Every method is one transaction. A store guarantees that an outcome is recorded once: an
/// outcome for an attempt that is no longer the job's current one (its lease expired and
/// another worker claimed it, or the run was cancelled) is refused, not recorded.
///
/// ``SQLiteJobStore`` keeps them in one SQLite file. The protocol is what a ``DurableQueue``
/// needs, so another database can hold them too: its transactions, and how its workers learn
/// that other processes changed it (``workSignal``). How a worker waits, claims and renews is the
/// queue's, not the store's.
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

    /// Records how attempts ended, then claims jobs if `claim` is given: a worker settles the
    /// jobs that ended and takes the next ones in one call (with no outcome, it only claims).
    /// ``SQLiteJobStore`` does both in one transaction; a store shared by many processes may use
    /// two (the outcomes' first), as long as each outcome's own rules below hold (the PostgreSQL
    /// store uses one when the outcomes released work and the claim's lock is free at once).
    ///
    /// The claim takes up to `claim.limit` jobs of `claim.kinds` that are ready and due at
    /// `claim.now` (or running under a lease that expired before it), highest priority first,
    /// within each run's limits: each is marked running for `claim.worker` until
    /// `claim.leaseExpiry`, its attempt counted. A worker never takes a job it has no handler
    /// for.
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

    /// Gives back the leases `worker` holds on `jobs`, as ``releaseLeases(of:worker:now:)``
    /// does, knowing which of them had `started`: their handler had begun (or said so with
    /// ``JobContext/markStarted()``). A job with ``DurableJobOptions/atMostOnce`` among
    /// `started` ends ``DurableJobState/uncertain`` (its dependents and its run follow, as for a
    /// job that failed); every other job becomes claimable at `now`, its attempt counted.
    /// ``releaseLeases(of:worker:now:)`` takes every job as started. The default, for a store
    /// without at-most-once jobs, calls it.
    func releaseLeases(of jobs: [JobKey], started: Set<JobKey>, worker: String, now: Date) async throws

    /// Sends the ``DurableJobState/uncertain`` jobs of run `runID` again: each becomes ready at
    /// `now` (its attempts still counted, its error cleared), the jobs skipped because of it are
    /// blocked on their dependencies again, and a run that had ended failed runs again (open for
    /// jobs again, if it was opened with ``DurableSubmission/isOpen``, until it is closed again).
    /// Under `FailurePolicy.failFast` the jobs the run's stop cancelled stay
    /// cancelled. A cancelled run is left as it is. The default, for a store without
    /// at-most-once jobs, does nothing.
    ///
    /// - Returns: How many jobs were made ready.
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``).
    func resendUncertain(runID: String, now: Date) async throws -> Int

    /// Holds every job of run `runID` that uses `resource` until `until`: none is claimed
    /// before then, by any worker. A later pause extends it; an earlier one (or one in the
    /// past) changes nothing. For a server's `Retry-After`, seen by the producer of a run: the
    /// jobs to that server wait rather than fail one after another. A pause reaches at most
    /// `Rate.maximumSpacing` past `now`. Pausing a run that does not exist, or has ended, does
    /// nothing. The default, for a store without resource rates, does nothing.
    func pauseResource(_ resource: String, of runID: String, until: Date, now: Date) async throws

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

    /// What lies ahead for a worker that found nothing to claim at `now` and runs nothing,
    /// read in one transaction: whether some run is unfinished, whether one is open, the
    /// earliest time after `now` at which a job becomes claimable, and (when nothing is due and
    /// no run is open) a ready job of none of `kinds`, which the worker's handlers cannot run.
    func outlook(after now: Date, kinds: Set<String>) async throws -> WorkOutlook

    /// How the workers over this store learn that other processes changed it: ``WorkSignal/inProcess``
    /// for a store only this process uses, else polling or notifications.
    var workSignal: WorkSignal { get }
}

extension JobStore {
    public func releaseLeases(of jobs: [JobKey], worker: String, now: Date) async throws {
        try await renewLeases(of: jobs, worker: worker, until: now)
    }

    public func releaseLeases(of jobs: [JobKey], started: Set<JobKey>, worker: String, now: Date) async throws {
        try await releaseLeases(of: jobs, worker: worker, now: now)
    }

    public func resendUncertain(runID: String, now: Date) async throws -> Int { 0 }

    public func pauseResource(_ resource: String, of runID: String, until: Date, now: Date) async throws {}
}

/// A store whose claims say when a job held back by its resource's rate or pause may be
/// claimed next (``ClaimPlanner/nextRelease``): a worker with room for more jobs claims again
/// then, rather than when one of its jobs ends. Both stores of the package are.
package protocol ReleaseTimes: JobStore {
    /// ``JobStore/record(_:thenClaim:now:)``, and the earliest time after the claim's at which
    /// a resource held by its rate or a pause lets a job go (`nil`: none is held, or no claim).
    func recordAndClaim(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob], nextRelease: Date?)
}

/// A run as it is submitted to a store.
public struct DurableSubmission: Sendable {
    /// The run's id, chosen by the caller.
    public var runID: String
    /// How many of its jobs may run at once.
    public var limit: Int
    /// How many of its jobs may use each named resource at once.
    public var resourceLimits: [String: Int]
    /// How often the jobs that use each named resource may start (see ``DurableRate``). A
    /// resource may have a limit, a rate, or both.
    public var resourceRates: [String: DurableRate] = [:]
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
    /// What produces the run's jobs, if the caller names it (a digest of the producer's logic,
    /// such as a workflow file's): part of what identifies the run, so that a run opened again by
    /// another producer under the same id is refused rather than mixed with it.
    public var version: String?

    /// Checks, for jobs appended to a run, that each resource a job uses is one of the run's
    /// `limited` ones (those it has a limit or a rate for).
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
        // Only when set: the runs stored before rates keep their fingerprints.
        for (name, rate) in resourceRates.sorted(by: { $0.key < $1.key }) {
            mix("rate:\(name)=\(rate.rate.count)/\(rate.rate.interval.saturatingNanoseconds)/\(rate.burst)".utf8)
        }
        mix((failurePolicy == .failFast ? "failFast" : "cancelDependents").utf8)
        if isOpen { mix("open".utf8) }
        // Only when set, as `atMostOnce` below.
        if let version { mix("version=\(version)".utf8) }
        for job in graph.jobs {
            mix(job.id.utf8)
            mix(job.kind.utf8)
            mix(job.input)
            for dependency in job.dependencies { mix(dependency.utf8) }
            for resource in job.options.resources { mix(resource.utf8) }
            mix(
                "\(job.options.priority)/\(job.options.cost)/\(String(describing: job.options.timeout))/\(job.options.retry)"
                    .utf8)
            // Only when set: the runs stored before the option keep their fingerprints.
            if job.options.atMostOnce { mix("atMostOnce".utf8) }
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

/// What a worker asks to claim: see ``JobStore/record(_:thenClaim:now:)``.
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
