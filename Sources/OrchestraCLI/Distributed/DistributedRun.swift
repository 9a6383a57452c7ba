import Foundation
import HTTPTypes
import Logging
import OrchestraDurable
import OrchestraDurableHTTP
import OrchestraHTTP
import OrchestraPostgres
import OrchestraWorkflow

/// `orchestra run FILE --state postgres://…`: this process runs the workflow (templates,
/// captures, assertions, retries, logins) and hands every request to the workers
/// (`orchestra worker`) through a run of the PostgreSQL store, opened for the requests as they
/// come and closed at the end.
struct DistributedRun {
    let url: String
    let schema: String
    let runID: String
    let workflow: Workflow
    /// `--resend-uncertain`: the run's requests that may have been sent (their jobs ended
    /// uncertain) are sent again when the run goes on.
    var resendsUncertain = false
    /// `--force`: go on with a run opened by another workflow file (or another version of this
    /// one); its requests are sent afresh, under this file's names.
    var force = false
    /// `--wait-for-store`: how long to wait at start for a database that cannot be reached
    /// (`nil`: as long as it takes).
    var waitForStore: Duration? = .seconds(60)
    /// The most connections a coordinator opens: one listens for outcomes, two append requests
    /// and read responses (with one, the run took 1.2 to 1.5 times as long).
    static let connections = 3

    /// How long the store keeps trying in an outage during the run, before the run fails.
    var outageTolerance: Duration? = PostgresJobStore.defaultOutageTolerance

    /// What the run did, for the closing line.
    struct Summary: Sendable {
        var runID: String
        var location: String
        /// Requests whose outcome was stored by an earlier coordinator of the run and reused.
        var reused: Int
        /// Requests handed to workers by this coordinator.
        var requests: Int
        /// Requests that got no response.
        var unanswered: Int
        /// Requests given up on whose jobs were left when the workflow ended, cancelled then.
        var abandoned: Int
        var state: DurableRunState

        /// What a coordinator's transport `counts`, in a run it `created` or one it goes on
        /// with. A job found already stored in a run this coordinator created is one of its own
        /// appends, tried again after its first try committed unseen (an outage): it was
        /// handed to workers by this coordinator, not read back from an earlier one.
        init(
            runID: String, location: String, counts: DurableHTTPTransport.Counts, created: Bool, abandoned: Int,
            state: DurableRunState
        ) {
            self.runID = runID
            self.location = location
            reused = created ? 0 : counts.reused
            requests = counts.appended + (created ? counts.reused : 0)
            unanswered = counts.unanswered
            self.abandoned = abandoned
            self.state = state
        }
    }

    /// A new run id: the workflow file's name and the time, `orders-20261126-071500-3fa9`.
    static func newRunID(file: String) -> String {
        let time = Date().formatted(
            .verbatim(
                "\(year: .defaultDigits)\(month: .twoDigits)\(day: .twoDigits)-\(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased))\(minute: .twoDigits)\(second: .twoDigits)",
                timeZone: .gmt, calendar: Calendar(identifier: .gregorian)))
        let base = RunTrace.baseName(of: file).filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
        return "\(base.isEmpty ? "run" : base)-\(time)-\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
    }

    /// How long a worker may take over a request that is not a step's (the login's; a step's
    /// takes the step's timeout): the longest timeout of the workflow's steps, the login's
    /// included. A request's timeout bounds each attempt on a worker, which stops the attempt
    /// there rather than hold its slot and its host's place in the limit while the server never
    /// answers; the coordinator waits for the outcome however long the request waits for a
    /// worker (``watchForWorkers(_:runID:schema:firstNote:clock:_:)`` says when none comes).
    var jobTimeout: Duration {
        workflow.steps.map(\.timeout).reduce(WorkflowStep.defaultTimeout, max)
    }

    /// What every job id of the run starts with: the workflow file's digest (its first 12
    /// digits). The jobs are named by step and element (`each[109]#1`): a coordinator that goes
    /// on with the run reads back the outcomes of the same file's requests, and a changed file
    /// sends its requests afresh.
    var jobPrefix: String { "\(workflow.digest.prefix(12))/" }

    /// The resource of `request`: that of the limit naming its `host:port` (its scheme's
    /// default port if it gives none), else the one naming its host, as the workflow's
    /// coordinator chooses (``WorkflowLimits``).
    func resource(for request: HTTPRequest) -> String? {
        workflow.limits.resource(scheme: request.scheme, authority: request.authority ?? "")
    }

    /// Opens the store and the run, and runs `body` with the transport that hands requests to
    /// workers; then closes the run, or cancels it if `cancelled()` says the run was
    /// interrupted or if jobs of requests the workflow gave up on are left (requests not yet
    /// sent are then never sent).
    ///
    /// - Throws: `DurableError` when the store or the run cannot be used (before `body` runs);
    ///   what `body` throws.
    func run<T: Sendable>(
        announce: (String) -> Void, waitingNote: @escaping @Sendable (String) -> Void,
        cancelled: @escaping @Sendable () -> Bool, rateEvents: RateEventRelay? = nil,
        hostFigures: (T) -> [DurableHostFigures] = { _ in [] }, steps tally: WorkflowStepTally? = nil,
        _ body: (any HTTPTransport) async throws -> T
    ) async throws -> (T, Summary) {
        let quiet = Logger(label: "orchestra.run", factory: { _ in SwiftLogNoOpLogHandler() })
        return try await PostgresJobStore.withStore(
            url: url, schema: schema, logger: quiet, waitingUpTo: waitForStore, connections: Self.connections,
            outageTolerance: outageTolerance,
            onConnectivity: StoreConnectivity.notes("orchestra run")
        ) { store in
            let queue = DurableQueue(store: store, worker: "coordinator-\(getpid())")
            let limits = workflow.limits
            // The run belongs to the workflow file that opened it (its digest is part of the
            // run's identity): a coordinator restarted with an edited file, or another file
            // under the same id, is refused rather than mixing its requests with the run's.
            var forced = false
            let created: Bool
            do {
                created = try await queue.open(
                    runID: runID, limit: limits.durableLimit, resourceLimits: limits.resourceLimits,
                    resourceRates: limits.resourceRates,
                    version: workflow.digest)
            } catch let error as DurableError where error.code == .runIDInUse {
                guard force else {
                    throw DurableError(
                        code: .runIDInUse,
                        message:
                            "run '\(runID)' in schema '\(schema)' at \(store.location) was opened by another workflow file or another version of this one; give the file it was started with, another --run-id, or --force to go on with it (this file's requests are then sent afresh)"
                    )
                }
                (created, forced) = (false, true)
            }
            // Counted by state in the store, not read: a run's jobs carry their requests and responses.
            let existing =
                created ? 0 : try await store.runSummaries(id: runID, limit: 1).first?.jobs.values.reduce(0, +) ?? 0
            // Before the run's state is read: a run that ended failed for them runs again.
            let resent = resendsUncertain && !created ? try await queue.resendUncertain(runID: runID) : 0
            let run = try await queue.run(runID)
            guard run.state == .running else {
                throw DurableError(
                    code: .runClosed,
                    message:
                        "run '\(runID)' in schema '\(schema)' at \(store.location) has ended (\(run.state.rawValue)); give another --run-id, or none for a new run"
                )
            }
            announce(
                created
                    ? "run '\(runID)' in schema '\(schema)' at \(store.location): requests are sent by 'orchestra worker --state postgres://… --schema \(schema)'"
                    : "run '\(runID)' in schema '\(schema)' at \(store.location) goes on: \(Format.count(existing, "request")) stored by an earlier coordinator"
                        + (forced ? " of another version of the workflow file, not read back (--force)" : "")
                        + (resent > 0 ? ", \(resent) that may have been sent sent again (--resend-uncertain)" : "")
            )
            // A server's pause (429 + Retry-After) holds the jobs to its host that the store
            // has already, not only the requests this coordinator has yet to hand out.
            rateEvents?.forward { [runID, limits] event in
                guard case .paused(let duration) = event.change, let host = HTTPHostKey(pacedHost: event.host),
                    let resource = limits.resource(of: host)
                else { return }
                Task { try? await queue.pauseResource(resource, of: runID, for: duration) }
            }
            defer { rateEvents?.forward(nil) }
            // A new run shows its steps at once; a run that goes on keeps the figures of its
            // earlier coordinator until this one has news.
            let steps = tally.map { StepRecorder(tally: $0, store: store, runID: runID, from: created ? -1 : 0) }
            let (result, counts) = try await queue.withOutcomes(of: runID) { outcomes in
                let transport = DurableHTTPTransport(
                    queue: queue, runID: runID, outcomes: outcomes,
                    maximumConnectionsPerHost: limits.connectionsPerHost,
                    jobTimeout: jobTimeout, resource: { self.resource(for: $0) }, jobPrefix: jobPrefix)
                return try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await Self.watchForWorkers(store, runID: runID, schema: self.schema, waitingNote) }
                    if let steps { group.addTask { await steps.keepRecording() } }
                    defer { group.cancelAll() }
                    return (try await body(transport), transport.counts)
                }
            }
            // The steps as the workflow ended them, for `orchestra status`; a failure to keep them
            // loses no request.
            await steps?.record()
            // What only this coordinator saw of each host (429s, the rate its server set), kept in
            // the run for `orchestra status`; a failure to keep them loses no request.
            try? await store.recordHosts(hostFigures(result), of: runID)
            var abandoned = 0
            if cancelled() {
                try await queue.cancel(runID: runID)
            } else if try await queue.close(runID: runID) == nil {
                // Jobs left: requests the workflow gave up on (a step whose failure ended the
                // run while they waited for a worker, or ran on one). Cancelled, so that a worker
                // that comes later does not send them.
                let summary = try await store.runSummaries(id: runID, limit: 1).first
                abandoned = [.blocked, .ready, .running].reduce(0) { $0 + (summary?.jobs[$1] ?? 0) }
                if abandoned > 0 { try await queue.cancel(runID: runID) }
            }
            let state = try await queue.run(runID).state
            // An ended run's requests (credentials included) and responses leave the store; those
            // that may have been sent stay for --resend-uncertain. Not fatal: the run is done.
            if state != .running {
                do {
                    try await store.forgetPayloads(ofEndedRun: runID)
                } catch {
                    waitingNote(
                        "could not clear the ended run's requests and responses from the store: \(error); they stay until the run is removed"
                    )
                }
            }
            return (
                result,
                Summary(
                    runID: runID, location: store.location, counts: counts, created: created, abandoned: abandoned,
                    state: state)
            )
        }
    }

    /// Says on `note` that requests wait and no worker has claimed one for a while
    /// (``WorkerWatch``: after 30 s, then each time the wait has doubled, at most 10 minutes
    /// apart), looking at the run in the store every few seconds. The run goes on waiting: a
    /// step's timeout bounds each attempt on a worker, not the wait for one. Ends when
    /// cancelled, or quietly at the store's first error (the run itself then reports it).
    static func watchForWorkers<C: Clock<Duration>>(
        _ store: PostgresJobStore, runID: String, schema: String, firstNote: Duration = WorkerWatch.firstNote(),
        clock: C = ContinuousClock(), _ note: @Sendable (String) -> Void
    ) async {
        var watch = WorkerWatch(firstNote: firstNote)
        let interval = min(.seconds(5), watch.firstNote / 3)
        let start = clock.now
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
                guard let summary = try await store.runSummaries(id: runID, limit: 1).first else { continue }
                let waiting = summary.jobs[.ready] ?? 0
                let ended = summary.jobs.filter { $0.key.isTerminal }.values.reduce(0, +)
                let look = WorkerWatch.Look(waiting: waiting, running: summary.jobs[.running] ?? 0, ended: ended)
                if let waited = watch.observe(look, at: start.duration(to: clock.now)) {
                    note(WorkerWatch.note(waited: waited, waiting: waiting, runID: runID, schema: schema))
                }
            } catch {
                return
            }
        }
    }
}
