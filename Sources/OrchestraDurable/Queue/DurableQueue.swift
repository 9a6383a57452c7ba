import Foundation
import Orchestra

/// Runs durable runs: the handlers by job kind, and the workers that claim jobs from a store.
///
/// ```swift
/// let queue = DurableQueue(store: try SQLiteJobStore(path: "runs.sqlite"))
/// queue.register(fetch) { request, context in try await api.fetch(request, key: context.idempotencyKey) }
/// var graph = DurableGraph()
/// let page = try graph.add("page-1", fetch, input: FetchRequest(page: 1))
/// try await queue.submit(graph, runID: "sync-2026-11-26")
/// try await queue.drain()                      // after a crash: the same two lines resume it
/// let run = try await queue.run("sync-2026-11-26")
/// ```
///
/// Guarantees: a job runs at least once and its outcome is recorded exactly once. A job whose
/// worker died (its lease expired) is claimed again, its attempt counted; a retry keeps its
/// stored time; a finished job never runs again. Handlers must therefore tolerate running
/// twice: pass ``JobContext/idempotencyKey`` or ``JobContext/jobKey`` to the outside world.
/// A job that must not (``DurableJobOptions/atMostOnce``) ends ``DurableJobState/uncertain``
/// instead of running again; ``resendUncertain(runID:)`` sends it again on demand.
public final class DurableQueue: Sendable {
    typealias Handler = @Sendable (Data, JobContext) async throws -> Data

    let store: any JobStore
    let handlers = Locked([String: Handler]())
    let hub = DurableEventHub()
    /// Which running attempts have started their effect: a graceful give-back of an
    /// at-most-once job depends on it.
    let starts = AttemptStarts()
    /// How to wake the worker loops running now: jobs submitted or appended through this
    /// queue, or a run closed, wake them.
    let loops = Locked([ObjectIdentifier: @Sendable () -> Void]())
    /// This queue's name in the leases it takes.
    public let worker: String
    /// How long a claim holds a job before another worker may take it.
    public let leaseDuration: Duration
    /// How often this queue renews the leases of the jobs it runs: a third of
    /// ``leaseDuration``, so that a renewal delayed by a busy machine or a slow store still
    /// lands before the lease ends. A dead worker's jobs are claimable again at most one lease
    /// after its last renewal.
    public var leaseRenewalInterval: Duration { leaseDuration / 3 }
    let now: @Sendable () -> Date
    let sleep: @Sendable (Date) async throws -> Void
    /// `withTimeout` on the queue's clock.
    private let timing: @Sendable (Duration, @escaping @Sendable () async throws -> Data) async throws -> Data

    /// A queue over `store`.
    ///
    /// - Parameters:
    ///   - store: Where runs live.
    ///   - worker: The name its leases carry; unique per process.
    ///   - leaseDuration: How long a claim holds a job without news from its worker. The worker
    ///     renews it every third of a lease (``leaseRenewalInterval``) while the job runs, so it
    ///     expires only when the worker stops (a crash, a process paused); the job may then be
    ///     claimed by another worker. Choose it longer than a worker may go without running.
    ///   - clock: Measures time (retries, leases); a manual clock in tests.
    ///   - wallClockStart: The date `clock.now` stands for: stored times are dates, so that a
    ///     new process reads them.
    public init<C: Clock>(
        store: any JobStore, worker: String = "worker-\(UUID().uuidString.prefix(8))",
        leaseDuration: Duration = .seconds(300), clock: C = ContinuousClock(), wallClockStart: Date = Date()
    ) where C.Duration == Duration {
        self.store = store
        self.worker = worker
        self.leaseDuration = leaseDuration
        let start = clock.now
        now = { wallClockStart.addingTimeInterval(start.duration(to: clock.now).seconds) }
        sleep = { date in
            let offset = Duration.milliseconds(Int64((date.timeIntervalSince(wallClockStart) * 1000).rounded()))
            try await clock.sleep(until: start.advanced(by: offset), tolerance: nil)
        }
        timing = { timeout, body in try await withTimeout(timeout, clock: clock, body) }
    }

    /// Runs `handler` for every job of `kind`. Register every kind before ``drain(limit:)``;
    /// registering a kind again replaces its handler.
    public func register<Input, Output>(
        _ kind: JobKind<Input, Output>, handler: @escaping @Sendable (Input, JobContext) async throws -> Output
    ) {
        let run: Handler = { data, context in
            let input: Input
            do {
                input = try JSONDecoder().decode(Input.self, from: data)
            } catch {
                throw DurableJobFailure(
                    "the input of job '\(context.jobID)' is not a \(Input.self) (kind '\(kind.name)'): \(error)",
                    retryable: false)
            }
            return try JSONEncoder().encode(try await handler(input, context))
        }
        handlers.withLock { $0[kind.name] = run }
    }

    /// Stores a run of `graph`'s jobs under `runID`. Submitting the same graph under the same
    /// id again does nothing and returns `false`, so a process that restarts can submit its
    /// run again and then resume it.
    ///
    /// - Parameters:
    ///   - graph: The jobs; checked before anything is stored.
    ///   - runID: The run's id, chosen by the caller.
    ///   - limit: How many of the run's jobs may run at once.
    ///   - resourceLimits: How many of the run's jobs may use each named resource at once
    ///     (``DurableJobOptions/resources``).
    ///   - resourceRates: How often the run's jobs that use each named resource may start,
    ///     across every worker (``DurableRate``). A resource may have a limit, a rate, or both.
    ///   - failurePolicy: What a failed job does to the others: skip its dependents, or stop
    ///     the run.
    /// - Returns: `true` if the run was stored now.
    /// - Throws: ``DurableError``: ``DurableError/Code/invalidGraph`` (nothing stored),
    ///   ``DurableError/Code/runIDInUse``, or the store's errors.
    @discardableResult
    public func submit(
        _ graph: DurableGraph, runID: String, limit: Int = 8, resourceLimits: [String: Int] = [:],
        resourceRates: [String: DurableRate] = [:], failurePolicy: FailurePolicy = .cancelDependents
    ) async throws -> Bool {
        try await storeRun(
            graph, runID: runID, limit: limit, resourceLimits: resourceLimits, resourceRates: resourceRates,
            failurePolicy: failurePolicy, isOpen: false)
    }

    /// Opens a run that takes jobs as they come (``append(_:to:)``) rather than as one graph:
    /// for a process that decides its next jobs from the outcomes of earlier ones, such as
    /// `orchestra run` handing a workflow's requests to workers on other machines. The run's
    /// limits hold across all of its jobs, whenever they were added; it does not end when its
    /// jobs have, but once it is closed (``close(runID:)``). Opening the same id again with the
    /// same limits and `version` does nothing and returns `false`, so a coordinator that
    /// restarts goes on with its run.
    ///
    /// - Parameters:
    ///   - runID: The run's id, chosen by the caller.
    ///   - limit: How many of the run's jobs may run at once.
    ///   - resourceLimits: How many of the run's jobs may use each named resource at once.
    ///   - resourceRates: How often the run's jobs that use each named resource may start,
    ///     across every worker (``DurableRate``): `["api.github.com": DurableRate(.perSecond(30))]`.
    ///     A resource may have a limit, a rate, or both.
    ///   - failurePolicy: What a failed job does to the others, as for
    ///     ``submit(_:runID:limit:resourceLimits:resourceRates:failurePolicy:)``.
    ///   - version: What produces the run's jobs (`orchestra run` gives its workflow file's
    ///     digest): the run is opened again only by the same version, so that another
    ///     producer, or an edited one, is refused under the id rather than mixing its jobs
    ///     with the run's. `nil`: none is checked.
    /// - Returns: `true` if the run was stored now.
    /// - Throws: ``DurableError``: ``DurableError/Code/invalidGraph`` for a limit below 1,
    ///   ``DurableError/Code/runIDInUse`` for an id in use by another run (or this one with
    ///   other limits or another `version`); the store's errors.
    @discardableResult
    public func open(
        runID: String, limit: Int = 8, resourceLimits: [String: Int] = [:],
        resourceRates: [String: DurableRate] = [:], failurePolicy: FailurePolicy = .cancelDependents,
        version: String? = nil
    ) async throws -> Bool {
        try await storeRun(
            DurableGraph(), runID: runID, limit: limit, resourceLimits: resourceLimits, resourceRates: resourceRates,
            failurePolicy: failurePolicy, isOpen: true, version: version)
    }

    /// Checks and stores a run for ``submit(_:runID:limit:resourceLimits:resourceRates:failurePolicy:)``
    /// and ``open(runID:limit:resourceLimits:resourceRates:failurePolicy:version:)``; a submitted
    /// run's jobs wake this queue's workers.
    private func storeRun(
        _ graph: DurableGraph, runID: String, limit: Int, resourceLimits: [String: Int],
        resourceRates: [String: DurableRate], failurePolicy: FailurePolicy, isOpen: Bool, version: String? = nil
    ) async throws -> Bool {
        guard limit >= 1 else {
            throw DurableError(code: .invalidGraph, message: "run '\(runID)': limit must be at least 1, got \(limit)")
        }
        for (name, rate) in resourceRates.sorted(by: { $0.key < $1.key }) where rate.burst < 1 {
            throw DurableError(
                code: .invalidGraph, message: "resource '\(name)': its burst must be at least 1, got \(rate.burst)")
        }
        var submission = DurableSubmission(
            runID: runID, limit: limit, resourceLimits: resourceLimits, failurePolicy: failurePolicy, graph: graph,
            criticalPaths: try graph.validate(resourceLimits: resourceLimits, rated: Set(resourceRates.keys)),
            now: now())
        submission.resourceRates = resourceRates
        submission.isOpen = isOpen
        submission.version = version
        let stored = try await store.submit(submission)
        if stored && !isOpen { wakeLoops() }
        return stored
    }

    /// Adds `graph`'s jobs to the open run `runID`: they may depend on each other, not on the
    /// run's earlier jobs, and use the resources it was opened with. A job the run has
    /// already (the same id, kind and input) is left as it is.
    ///
    /// - Returns: How many jobs were added.
    /// - Throws: ``DurableError``: ``DurableError/Code/invalidGraph`` (nothing added),
    ///   ``DurableError/Code/unknownRun``, ``DurableError/Code/runClosed``,
    ///   ``DurableError/Code/runIDInUse`` (a job id in use with another kind or input).
    @discardableResult
    public func append(_ graph: DurableGraph, to runID: String) async throws -> Int {
        let criticalPaths = try graph.validate(resourceLimits: nil)
        let added = try await store.append(
            DurableSubmission(
                runID: runID, limit: 1, resourceLimits: [:], failurePolicy: .cancelDependents, graph: graph,
                criticalPaths: criticalPaths, now: now()))
        if added > 0 {
            wakeLoops()
        }
        return added
    }

    /// Closes the open run `runID`: it ends once its jobs have (now, if they have).
    ///
    /// - Returns: The run's state if it ended now.
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``).
    @discardableResult
    public func close(runID: String) async throws -> DurableRunState? {
        let ended = try await store.close(runID: runID, now: now())
        if let ended { hub.emit(.runEnded(runID: runID, state: ended)) }
        // A worker of this queue waiting for the run's next jobs looks again: it may be over.
        wakeLoops()
        return ended
    }

    /// Runs `body` with a waiter for the outcomes of run `runID`'s jobs: call
    /// ``DurableOutcomes/wait(for:)`` from as many tasks as there are jobs to wait for. It
    /// learns of outcomes from this queue's workers and, on a shared store, from the store's
    /// notifications (and its poll interval), and looks for all the jobs waited for in one
    /// query each time.
    ///
    /// ```swift
    /// try await queue.open(runID: "crawl", limit: 32, resourceLimits: ["example.com": 4])
    /// try await queue.withOutcomes(of: "crawl") { outcomes in
    ///     var graph = DurableGraph()
    ///     let page = try graph.add("page-1", fetch, input: url, options: .init(resources: ["example.com"]))
    ///     try await queue.append(graph, to: "crawl")
    ///     let body = try await outcomes.wait(for: page.id).output(as: String.self)
    /// }
    /// try await queue.close(runID: "crawl")
    /// ```
    ///
    /// Cancellation: cancelling the caller cancels `body`; the jobs go on.
    public func withOutcomes<T: Sendable>(
        of runID: String, _ body: (DurableOutcomes) async throws -> T
    ) async throws -> T {
        let outcomes = DurableOutcomes(runID: runID)
        let events = hub.subscribe()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            listen(to: events, in: &group, onChange: outcomes.changed) { event in
                switch event {
                case .succeeded(let key, _) where key.runID == runID: .jobs([key])
                // A failure for good fails or skips dependents the event does not name; one to
                // be tried again ends nothing.
                case .failed(let key, _, _, nil) where key.runID == runID: .any
                case .runEnded(runID, _): .any
                default: nil
                }
            }
            group.addTask { try await self.watch(outcomes) }
            defer { group.cancelAll() }
            return try await body(outcomes)
        }
    }

    /// Adds to `group` the listeners that tell `onChange` whatever may have changed what a
    /// waiter looks for: this queue's `events` as `notice` sees them (`nil`: not a change), the
    /// store's notifications of outcomes (other processes' workers), and its lease endings (a
    /// lease that ended made a job uncertain, and no worker records an outcome for it).
    private func listen(
        to events: AsyncStream<DurableEvent>, in group: inout ThrowingTaskGroup<Void, any Error>,
        onChange: @escaping @Sendable (OutcomeNotice) -> Void,
        notice: @escaping @Sendable (DurableEvent) -> OutcomeNotice?
    ) {
        group.addTask {
            for await event in events { if let notice = notice(event) { onChange(notice) } }
        }
        group.addTask { try? await self.store.workSignal.listenForOutcomes(onChange) }
        group.addTask {
            try? await (self.store as? any LeaseEndingNotices)?.listenForLeaseEndings { onChange(.any) }
        }
    }

    /// Looks for the outcomes waited for each time something may have changed (or, on a
    /// shared store, after its poll interval), until cancelled.
    private func watch(_ outcomes: DurableOutcomes) async throws {
        while !Task.isCancelled {
            let seen = outcomes.changes.read { $0 }
            let asked = outcomes.takeJobsToLookAt()
            if !asked.isEmpty {
                do {
                    outcomes.settle(try await store.jobs(of: outcomes.runID, ids: asked), asked: asked)
                } catch is CancellationError {
                    return
                } catch {
                    outcomes.fail(error)
                }
            }
            let signal = store.workSignal
            let poll =
                signal.isShared && outcomes.isWaiting
                ? signal.pollInterval.map { now().addingTimeInterval($0.seconds) } : nil
            try await idle(until: poll, orNotificationAfter: seen, outcomes.changes)
            // Woken by the poll, not by a change: a notification may have been lost.
            if outcomes.changes.read({ $0 }) == seen { outcomes.changed(.any) }
        }
    }

    /// Works until no run is left unfinished: claims jobs of registered kinds (at most `limit`
    /// at once, and within each run's limit), runs them, records each outcome, and waits for
    /// retries that are scheduled later.
    ///
    /// Cancellation: cancelling the calling task cancels the running handlers; their jobs stay
    /// claimed until their leases expire (as after a crash), and are then run again.
    ///
    /// On a store other processes share (``WorkSignal/isShared``), this queue is one worker among
    /// several: when it finds nothing to claim it waits for the store's notification of new
    /// work, its next due time or its poll interval, and it leaves jobs of kinds it has no
    /// handler for to the workers that have one. It still returns once no run is unfinished.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownJobKind``) when the only jobs
    ///   left are of kinds with no handler here, naming the run, the job and the kind (on a
    ///   store of its own); the store's errors; `CancellationError`.
    public func drain(limit: Int = 8) async throws {
        precondition(limit >= 1, "DurableQueue.drain(limit:): limit must be at least 1, got \(limit)")
        try await workLoop(limit: limit, stop: nil, gracePeriod: .zero)
    }

    /// Works as a long-lived worker until `stop` is requested: claims and runs jobs as
    /// ``drain(limit:)`` does, but when no run is left it waits for new ones (submitted through
    /// this queue, or, on a shared store, by any process) instead of returning.
    ///
    /// A graceful stop (``DurableStopSignal/request()``): the worker claims nothing more and
    /// lets the jobs it runs finish, recording their outcomes, for up to `gracePeriod` on the
    /// queue's clock. It then cancels the handlers still running and gives back their leases
    /// (``JobStore/releaseLeases(of:worker:now:)``), so that another worker claims those jobs at
    /// once rather than when the leases would have expired; their attempts still count. It
    /// returns once every handler has returned.
    ///
    /// Cancellation: as for ``drain(limit:)``, the running handlers are cancelled and their jobs
    /// stay claimed until their leases expire.
    ///
    /// - Throws: The store's errors; `CancellationError`.
    public func work(
        limit: Int = 8, until stop: DurableStopSignal, gracePeriod: Duration = .seconds(30)
    )
        async throws
    {
        precondition(limit >= 1, "DurableQueue.work(limit:until:gracePeriod:): limit must be at least 1, got \(limit)")
        try await workLoop(limit: limit, stop: stop, gracePeriod: max(gracePeriod, .zero))
    }

    /// Wakes this queue's worker loops to look for work.
    private func wakeLoops() {
        for wake in loops.withLock({ Array($0.values) }) { wake() }
    }

    /// Waits until `date` on the queue's clock (if given), or until a notification of work
    /// arrives after the `seen`th, whichever comes first. Cancellation: throws
    /// `CancellationError`.
    private func idle(
        until date: Date?, orNotificationAfter seen: Int, _ notifications: AwaitedState<Int>
    )
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let date { group.addTask { try await self.sleep(date) } }
            group.addTask { _ = await notifications.wait { $0 > seen ? true : nil } }
            defer { group.cancelAll() }
            try await group.next()
            // The wait for work ends quietly when cancelled: the caller must still stop.
            try Task.checkCancellation()
        }
    }

    /// Runs one attempt: how it ended, for the worker loop to record.
    ///
    /// - Throws: `CancellationError` only when the worker stops (its lease then expires and
    ///   the job is claimed again); every other error is a failed attempt.
    func attempt(_ job: ClaimedJob) async throws -> JobOutcome {
        defer { starts.ended(job.key, attempt: job.attempt) }
        // Given back before it began (a graceful stop): it must not begin now.
        guard starts.mark(job.key, attempt: job.attempt, started: true) else { throw CancellationError() }
        let context = JobContext(job, starts: starts)
        do {
            guard let handler = handlers.withLock({ $0[job.kind] }) else {
                throw DurableJobFailure("no handler for kind '\(job.kind)'", retryable: true)
            }
            let output =
                if let timeout = job.timeout {
                    try await timing(timeout) { try await handler(job.input, context) }
                } else {
                    try await handler(job.input, context)
                }
            return .succeeded(output)
        } catch is CancellationError where Task.isCancelled {
            throw CancellationError()
        } catch {
            let retryable = (error as? DurableJobFailure)?.retryable ?? true
            let retryAt =
                retryable && job.attempt < job.retry.maxAttempts
                ? now().addingTimeInterval(job.retry.delay(afterAttempt: job.attempt).seconds) : nil
            return .failed("\(error)", retryAt: retryAt)
        }
    }

    /// Tells the subscribers how a recorded attempt ended.
    func report(_ attempt: AttemptOutcome, _ recorded: RecordedOutcome) {
        guard recorded.recorded else { return }
        let job = attempt.job
        switch attempt.outcome {
        case .succeeded: hub.emit(.succeeded(job.key, attempt: job.attempt))
        case .failed(let error, let retryAt):
            hub.emit(.failed(job.key, attempt: job.attempt, error: error, retryAt: retryAt))
        }
        if let state = recorded.runEnded { hub.emit(.runEnded(runID: job.key.runID, state: state)) }
    }

    /// Sends the ``DurableJobState/uncertain`` jobs of run `runID` again, on demand: once
    /// someone has checked that their effect did not happen (or that repeating it is fine).
    /// Each becomes ready (its attempts still counted), the jobs skipped because of it wait
    /// for it again, and a run that had ended failed for it runs again (a run opened with
    /// ``open(runID:limit:resourceLimits:resourceRates:failurePolicy:version:)`` takes jobs again, until it is closed
    /// again: its coordinator goes on with it); this queue's workers are woken. Under `FailurePolicy.failFast` the jobs the run's stop cancelled stay
    /// cancelled; a cancelled run is left as it is.
    ///
    /// ```swift
    /// let sent = try await queue.resendUncertain(runID: "checkout-42")
    /// try await queue.drain()
    /// ```
    ///
    /// - Returns: How many jobs were made ready.
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``); the store's errors.
    @discardableResult
    public func resendUncertain(runID: String) async throws -> Int {
        let resent = try await store.resendUncertain(runID: runID, now: now())
        if resent > 0 { wakeLoops() }
        return resent
    }

    /// Holds every job of run `runID` that uses `resource` for `duration` from now on the
    /// queue's clock: no worker claims one before then (``JobStore/pauseResource(_:of:until:now:)``).
    /// For a server's `Retry-After` (a 429 or 503) seen by the run's producer: the jobs to that
    /// server wait instead of each failing against it. A later pause extends it; a shorter one
    /// changes nothing. The rate of the resource (if any) applies again once the pause ends.
    ///
    /// ```swift
    /// try await queue.pauseResource("api.github.com", of: "crawl", for: .seconds(retryAfter))
    /// ```
    ///
    /// - Throws: The store's errors.
    public func pauseResource(_ resource: String, of runID: String, for duration: Duration) async throws {
        let now = now()
        try await store.pauseResource(resource, of: runID, until: now.addingTimeInterval(duration.seconds), now: now)
    }

    /// Cancels run `runID`: its jobs that have not ended are marked cancelled, and the outcome
    /// of an attempt still running is not recorded.
    ///
    /// - Returns: `false` if the run had already ended.
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``).
    @discardableResult
    public func cancel(runID: String) async throws -> Bool {
        let cancelled = try await store.cancel(runID: runID, now: now())
        if cancelled { hub.emit(.runEnded(runID: runID, state: .cancelled)) }
        return cancelled
    }

    /// What this queue's workers do from now on: attempts started, outcomes recorded, runs
    /// ended (and runs cancelled through this queue). Each call is a stream of its own that
    /// misses nothing; stop iterating it to unsubscribe.
    ///
    /// ```swift
    /// for await event in queue.events() {
    ///     if case .succeeded(let job, _) = event { progress.advance(job) }
    /// }
    /// ```
    public func events() -> AsyncStream<DurableEvent> {
        hub.subscribe()
    }

    /// Waits until run `runID` has ended and returns it as stored.
    ///
    /// It learns of the end from this queue's workers and cancels, from the store's
    /// notifications (a shared store's workers in other processes, a lease that ended), and in
    /// any case by reading the run again every ``resultPollInterval`` (or the store's shorter
    /// poll interval) on the queue's clock: a run worked on by other processes only, or ended as
    /// a lease ran out, still ends the wait.
    ///
    /// Cancellation: cancelling the waiting task throws `CancellationError`; the run goes on.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``), `CancellationError`.
    public func result(of runID: String) async throws -> DurableRunRecord {
        let changes = AwaitedState(0)
        // Subscribed before the run is first read: an end between the two is not missed.
        let events = hub.subscribe()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            listen(to: events, in: &group, onChange: { _ in changes.update { $0 += 1 } }) { event in
                if case .runEnded(runID, _) = event { .any } else { nil }
            }
            defer { group.cancelAll() }
            let interval = min(store.workSignal.pollInterval ?? Self.resultPollInterval, Self.resultPollInterval)
            while true {
                let seen = changes.read { $0 }
                let run = try await self.run(runID)
                if run.state.isTerminal { return run }
                try await idle(until: now().addingTimeInterval(interval.seconds), orNotificationAfter: seen, changes)
            }
        }
    }

    /// The longest ``result(of:)`` waits before it reads the run again when nothing told it of
    /// a change: 1 second.
    public static let resultPollInterval: Duration = .seconds(1)

    /// Removes the runs that ended more than `age` ago, with their jobs and outputs, and
    /// returns how many. Runs still going are never removed.
    @discardableResult
    public func removeFinishedRuns(olderThan age: Duration) async throws -> Int {
        try await store.removeRuns(endedBefore: now().addingTimeInterval(-age.seconds))
    }

    /// Run `runID` as stored.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownRun``).
    public func run(_ runID: String) async throws -> DurableRunRecord {
        guard let run = try await store.run(runID) else {
            throw DurableError(code: .unknownRun, message: "there is no run '\(runID)'")
        }
        return run
    }

    /// The jobs of run `runID`, in the order they were added: state, attempts, error, output.
    public func jobs(of runID: String) async throws -> [DurableJobRecord] {
        try await store.jobs(of: runID)
    }
}
