import Foundation
import Orchestra
import OrchestraHTTP

/// Runs a checked ``Workflow``: every step is a node of a `TaskGraph` (its dependencies are
/// its `needs` and the steps whose captures it uses), independent steps in parallel, and every
/// request goes through one `HTTPCoordinator`: at most `limit` requests in flight and at most
/// the `hosts:` limit to a host, each step's timeout, retries and redirect policy, and the
/// `auth:` block, which signs requests and refreshes the token once for everyone when it is
/// refused (its login and refresh requests go straight to the transport).
///
/// ```swift
/// let runner = WorkflowRunner(workflow: workflow)
/// let report = await runner.run { event in
///     if case .finished(let step) = event { print(step.id, step.state) }
/// }
/// ```
///
/// A `for_each` step is one node whose request is sent once per element of its list, each
/// element within the same limits, retries and timeout as a single request; its report lists
/// the elements under ``StepReport/items``.
///
/// Failures: with `failure: continue` the steps that depend on a failed step are skipped,
/// naming it, and independent steps go on; with `failure: stop` the first failure cancels the
/// running steps and skips the rest. Either way every step has a report.
///
/// Secrets: the values of the variables `secrets:` names are replaced with `***` in every
/// report and event (``Redactor``).
///
/// Cancellation: cancelling the calling task cancels the running steps (reported cancelled)
/// and starts no more; `run` still returns a report.
package struct WorkflowRunner: Sendable {
    package let workflow: Workflow
    private let transport: any HTTPTransport
    private let userAgent: String?
    private let keepsItemReports: Bool
    private let observer: (@Sendable (HTTPExchange) -> Void)?
    private let cookieJar: CookieJar?
    private let state: WorkflowState?
    private let resendsUncertain: Bool
    private let regexTimeLimit: Duration
    private let onRetry: (@Sendable (_ label: String, HTTPRetryEvent) -> Void)?
    private let onRateEvent: (@Sendable (HTTPRateEvent) -> Void)?
    private let onPoll: (@Sendable (_ label: String, PollAttempt, _ next: Duration?) -> Void)?
    private let bodies: ResponseBodyOptions

    /// - Parameters:
    ///   - workflow: A workflow from ``Workflow/load(contentsOf:name:variables:)``.
    ///   - transport: What sends the requests; `URLSessionTransport` by default. It must not
    ///     follow redirects (the coordinator does, as the workflow says).
    ///   - userAgent: Sent as `User-Agent` by every step that does not set one; `nil` leaves
    ///     it to the transport.
    ///   - keepsItemReports: Whether a `for_each` step's report lists every element (for
    ///     JSON reports and traces), or only the elements that did not succeed, so that memory
    ///     stays flat however long the list; its ``StepReport/itemCounts`` counts them all
    ///     either way.
    ///   - observer: Called with every request sent (each attempt, redirect hop, login and
    ///     refresh) and its response or failure, as it ends, from the task that sent it; not
    ///     redacted (`--verbose` redacts with ``Workflow/redactor``).
    ///   - cookieJar: The jar the steps share (`--cookie-jar` loads one); a new one by default.
    ///     Unused when the workflow says `cookies: false`.
    ///   - state: The `--state` file (``WorkflowState/open(path:workflow:force:)``) of a
    ///     resumable run: a request it records as succeeded is not sent again (its captures are
    ///     reused), every request's outcome is recorded as it ends, and a request that is not
    ///     safe to send twice is recorded as being sent before it goes out. Only for
    ///     ``run(clock:onEvent:)``.
    ///   - resendsUncertain: Whether a request an earlier run stopped with in flight, and that is
    ///     not safe to send twice, is sent again (`--resend-uncertain`) rather than reported as
    ///     "may have been sent".
    ///   - regexTimeLimit: How long the regular expressions a step runs on one response
    ///     (`regex:` captures, `matches:` checks) may work together, unless the step's `timeout`
    ///     is shorter; beyond, the step fails with `regex '(a+)+$' gave up after 3 s`. 3 s by
    ///     default. Cancellation stops them at once.
    ///   - onRetry: Called as a step's request is about to wait for another attempt (a
    ///     backoff, or the server's `Retry-After`), with the step's or element's label.
    ///   - bodies: The most bytes of a body held in memory (`--max-body`), and whether a body
    ///     nothing reads is held all the same (`--verbose`) rather than counted and dropped.
    ///   - onPoll: Called after each attempt of an `until:` poll, with the step's or element's
    ///     label and the wait before the next attempt (`nil` when the poll ends).
    ///   - onRateEvent: Called as a server changes its host's pace (a pause for `Retry-After`,
    ///     a rate from its `RateLimit` fields); the report lists them too.
    package init(
        workflow: Workflow, transport: any HTTPTransport = URLSessionTransport(), userAgent: String? = nil,
        keepsItemReports: Bool = true, observer: (@Sendable (HTTPExchange) -> Void)? = nil,
        cookieJar: CookieJar? = nil, state: WorkflowState? = nil, resendsUncertain: Bool = false,
        regexTimeLimit: Duration = BoundedRegex.defaultTimeLimit,
        onRetry: (@Sendable (_ label: String, HTTPRetryEvent) -> Void)? = nil,
        bodies: ResponseBodyOptions = ResponseBodyOptions(),
        onRateEvent: (@Sendable (HTTPRateEvent) -> Void)? = nil,
        onPoll: (@Sendable (_ label: String, PollAttempt, _ next: Duration?) -> Void)? = nil
    ) {
        self.onPoll = onPoll
        self.onRateEvent = onRateEvent
        self.bodies = bodies
        self.onRetry = onRetry
        self.regexTimeLimit = regexTimeLimit
        self.cookieJar = cookieJar
        self.state = state
        self.resendsUncertain = resendsUncertain
        self.workflow = workflow
        self.transport = transport
        self.userAgent = userAgent
        self.keepsItemReports = keepsItemReports
        self.observer = observer
    }

    /// Runs every step and returns their reports, in file order.
    ///
    /// - Parameters:
    ///   - clock: Measures timeouts, retry backoffs, token lifetimes and the report's times.
    ///   - onEvent: Called as each step starts and ends, and as each element of a `for_each`
    ///     step ends: one call at a time, in the order they happened, all of them before `run`
    ///     returns.
    package func run<C: Clock>(
        clock: C = ContinuousClock(), onEvent: @escaping @Sendable (WorkflowEvent) -> Void = { _ in }
    ) async -> WorkflowReport where C.Duration == Duration {
        let shared = Shared(self, clock: clock)
        var report: WorkflowReport
        if let state {
            // The state file's writer runs beside the steps and writes what they queued, even
            // after a cancellation, before `run` returns.
            async let writer: Void = state.runWriter()
            report = await runOnce(
                shared, row: [:], cookies: cookieJar ?? CookieJar(), state: state, clock: clock, onEvent: onEvent)
            state.recordHosts(shared.coordinator.hostRates)
            state.finish()
            await writer
        } else {
            report = await runOnce(
                shared, row: [:], cookies: cookieJar ?? CookieJar(), state: nil, clock: clock, onEvent: onEvent)
        }
        report.logins = shared.authenticator?.logins ?? 0
        report.refreshes = shared.authenticator?.refreshes ?? 0
        shared.describeRates(in: &report)
        return report
    }

    /// Runs the workflow once per row of a data file (`{{data.COLUMN}}` is the row's value),
    /// `parallel` rows at a time, all of them through one coordinator: the workflow's `limit`
    /// and `hosts:` limits hold across every row, and the `auth:` block logs in once and
    /// refreshes once for all of them. Each row has its own cookie jar (a copy of the runner's
    /// `cookieJar`, if it was given one).
    ///
    /// - Parameters:
    ///   - rows: The rows, in file order.
    ///   - parallel: How many rows run at once (at least 1).
    ///   - clock: As for ``run(clock:onEvent:)``.
    ///   - onRow: Called as each row ends, one call at a time, all before `run` returns.
    /// - Returns: Every row's report, in row order. Cancelling the calling task cancels the
    ///   rows in flight and starts no more; the rows never started are reported cancelled.
    package func run<C: Clock>(
        rows: [[String: String]], parallel: Int, clock: C = ContinuousClock(),
        onRow: @escaping @Sendable (DataRunReport.Row) -> Void = { _ in }
    ) async -> DataRunReport where C.Duration == Duration {
        precondition(parallel >= 1, "WorkflowRunner: parallel must be at least 1, got \(parallel)")
        precondition(state == nil, "WorkflowRunner: a --state file records one run, not a run per data row")
        let shared = Shared(self, clock: clock)
        let start = clock.now
        let template = cookieJar?.cookies ?? []
        var reports = [DataRunReport.Row?](repeating: nil, count: rows.count)
        // `parallel` rows at a time; cancelled, no row starts any more and the rows in flight
        // are cancelled, their reports still received.
        let runs = (0..<rows.count).completions(limit: parallel, whenCancelled: .deliverRunning) { index in
            let started = start.duration(to: clock.now)
            let jar = CookieJar()
            for cookie in template { jar.add(cookie) }
            let report = await runOnce(
                shared, row: rows[index], cookies: jar, state: nil, clock: clock, onEvent: { _ in })
            return DataRunReport.Row(index: index, data: rows[index], started: started, report: report)
        }
        for await (_, ran) in runs {
            // A row's run never throws: it reports what happened.
            guard case .success(let row) = ran else { continue }
            reports[row.index] = row
            onRow(row)
        }
        let ended = start.duration(to: clock.now)
        let all = reports.enumerated().map { index, row in
            row ?? DataRunReport.Row(index: index, data: rows[index], started: nil, report: notStarted(ended: ended))
        }
        var report = DataRunReport(
            rows: all, duration: ended, logins: shared.authenticator?.logins ?? 0,
            refreshes: shared.authenticator?.refreshes ?? 0)
        var rates = WorkflowReport(workflow: nil, steps: [], duration: ended)
        shared.describeRates(in: &rates)
        (report.hosts, report.rateEvents) = (rates.hosts, rates.rateEvents)
        return report
    }

    /// The report of a run that never started: every step cancelled.
    private func notStarted(ended: Duration) -> WorkflowReport {
        WorkflowReport(
            workflow: workflow.name,
            steps: workflow.steps.map { step in
                StepReport(
                    id: step.id, state: .cancelled, method: step.request.method.rawValue, url: step.request.url.source,
                    error: "cancelled before this row started")
            }, duration: ended)
    }

    /// What every run of a ``WorkflowRunner`` shares: the coordinator (its limits and the
    /// auth block's token) and the redaction of secrets.
    private struct Shared: Sendable {
        let authenticator: WorkflowAuthenticator?
        let coordinator: HTTPCoordinator
        let redactor: Redactor
        /// The rate events so far (at most `WorkflowReport.maximumRateEvents`) and how many
        /// more there were.
        let rateEvents = Locked((kept: [RateEventRecord](), dropped: 0))

        /// Puts the hosts' figures and the rate events in `report`.
        func describeRates(in report: inout WorkflowReport) {
            report.hosts = coordinator.hostRates
            let (kept, dropped) = rateEvents.withLock { ($0.kept, $0.dropped) }
            // The reason quotes the server's fields, which may echo a secret.
            report.rateEvents = kept.map { record in
                var record = record
                record.event.reason = redactor.redact(record.event.reason)
                return record
            }
            report.droppedRateEvents = dropped
        }

        init<C: Clock>(_ runner: WorkflowRunner, clock: C) where C.Duration == Duration {
            let workflow = runner.workflow
            func observed(label: String?) -> any HTTPTransport {
                guard let observer = runner.observer else { return runner.transport }
                return ObservedTransport(base: runner.transport, clock: clock, label: label, observe: observer)
            }
            // Logins and refreshes keep to the hosts' rates too; they go around the
            // coordinator's slots (a refresh must not wait behind the requests it unblocks),
            // so they take their permits from it once it exists.
            let pacing = PacedTransport(base: runner.transport)
            // The authenticator observes its own requests: its tokens are learned as secrets
            // before the observer shows the responses that carry them.
            authenticator = workflow.auth.map {
                WorkflowAuthenticator(
                    $0, values: TemplateValues(variables: workflow.variables, environment: workflow.environment),
                    transport: pacing, redactor: workflow.redactor, observer: runner.observer,
                    timeout: WorkflowStep.defaultTimeout, clock: clock)
            }
            let rateEvents = self.rateEvents
            let onRateEvent = runner.onRateEvent
            let start = clock.now
            // Timeouts, retries and redirects are per step (HTTPRequestOptions).
            coordinator = HTTPCoordinator(
                transport: CookieTransport(base: observed(label: nil)),
                configuration: workflow.limits.coordinatorConfiguration(
                    authentication: authenticator?.authentication,
                    onRateEvent: { event in
                        let at = start.duration(to: clock.now)
                        rateEvents.withLock { events in
                            if events.kept.count < WorkflowReport.maximumRateEvents {
                                events.kept.append(RateEventRecord(at: at, event: event))
                            } else {
                                events.dropped += 1
                            }
                        }
                        onRateEvent?(event)
                    }),
                clock: clock)
            pacing.pace(with: coordinator)
            redactor = workflow.redactor
        }
    }

    /// One run of the steps, with `row`'s values for `{{data.…}}` and the cookie jar `cookies`.
    private func runOnce<C: Clock>(
        _ shared: Shared, row: [String: String], cookies: CookieJar, state: WorkflowState?, clock: C,
        onEvent: @escaping @Sendable (WorkflowEvent) -> Void
    ) async -> WorkflowReport where C.Duration == Duration {
        // Events come from the graph's loop and from every for_each step; one task hands them
        // to `onEvent`, one at a time, in the order they happened.
        let (events, eventSink) = AsyncStream.makeStream(of: WorkflowEvent.self)
        async let delivered: Void = { for await event in events { onEvent(event) } }()
        let start = clock.now
        let redactor = shared.redactor
        // A paginate step's items go to the for_each step that takes them as pages arrive: that
        // step starts with its pages' step, not after it.
        let streams = PageStreams.plan(
            for: workflow, streaming: state == nil, capacity: 2 * workflow.limits.forEachWindow)
        let executor = StepExecutor(
            workflow: workflow, coordinator: shared.coordinator, userAgent: userAgent,
            cookies: workflow.usesCookies ? cookies : nil, row: row, keepsItemReports: keepsItemReports, clock: clock,
            start: start, records: Locked([:]), state: state, resendsUncertain: resendsUncertain,
            emit: { eventSink.yield($0) }, regexTimeLimit: regexTimeLimit, onRetry: onRetry, bodies: bodies,
            onPoll: onPoll, pageStreams: streams
        )
        let graph = TaskGraph()
        for step in workflow.steps {
            graph.add(id: step.id, dependsOn: streams.dependencies(of: step, in: workflow)) { inputs in
                // Messages built while the step runs mask the secrets before they cut a value.
                try await Redactor.$current.withValue(redactor) { try await executor.run(step, inputs: inputs) }
            }
        }
        var finished: [String: StepReport] = [:]
        var firstFailure: String?
        do {
            // The coordinator limits the requests in flight; the graph only keeps every ready
            // step from starting at once (each started step is a task, whose suspended frames
            // are kept while it waits: BENCHMARKS.md#workflow-files-at-scale).
            // A pages' step waiting for its for_each step to take items holds a slot: one more
            // slot per such pair, so the for_each step always finds one.
            let window = workflow.limits.graphWindow
            try await graph.withRun(
                limit: window == .max ? window : window + streams.byProducer.count,
                failurePolicy: workflow.failurePolicy == .stop ? .failFast : .cancelDependents,
                eventBuffer: workflow.steps.count * 4 + 64, clock: clock
            ) { run in
                for await event in run.events {
                    guard let report = report(of: event, executor: executor, firstFailure: &firstFailure) else {
                        continue
                    }
                    // A pages' step that ended without sending them all (it failed, was skipped
                    // or cancelled) tells the step taking its items; after all were sent, this
                    // changes nothing.
                    // A step taking a pages' step's items that ended (or was skipped) before
                    // taking them all: no further page is fetched for it.
                    streams.byConsumer[report.id]?.leave()
                    streams.byProducer[report.id]?.finish(
                        failure: report.state == .succeeded
                            ? nil : "\(report.state == .skipped ? "was skipped" : "ended \(report.state)")")
                    // Redacted once: the event and the final report share it.
                    let shown = redactor.redact(report)
                    finished[report.id] = shown
                    eventSink.yield(.finished(shown))
                }
                _ = try? await run.result
            }
        } catch {
            // The workflow was checked when it was loaded: the graph is valid.
            assertionFailure("WorkflowRunner: the graph of a checked workflow was refused: \(error)")
        }
        for channel in streams.byProducer.values { channel.finish(failure: "never ran") }
        let ended = executor.elapsed()
        eventSink.finish()
        await delivered
        // A step without an end event was stopped: by `failure: stop` after a failure, or by
        // cancelling the run (Ctrl-C). Only the first blames the failure.
        let stoppedBy = workflow.failurePolicy == .stop ? firstFailure : nil
        let steps = workflow.steps.map { step in
            if let report = finished[step.id] { return report }
            if var report = executor.records.withLock({ $0[step.id] }) {
                // It had started.
                report.markCancelled(stoppedBy: stoppedBy)
                report.ended = report.ended ?? ended
                return redactor.redact(report)
            }
            // Never started: its URL is as written, with no value of a variable in it.
            return StepReport(
                id: step.id, state: stoppedBy == nil ? .cancelled : .skipped, method: step.request.method.rawValue,
                url: step.request.url.source, ended: ended,
                error: stoppedBy.map { "skipped because '\(short: $0)' failed" } ?? "cancelled",
                cause: stoppedBy
            )
        }
        return WorkflowReport(workflow: workflow.name, steps: steps, duration: ended)
    }

    /// The report of a step that just ended, from what its executor recorded and how the graph
    /// says it ended; `nil` for events that are not an end.
    private func report<C>(of event: GraphEvent, executor: StepExecutor<C>, firstFailure: inout String?) -> StepReport?
    {
        guard let step = workflow.step(event.node) else { return nil }
        var report =
            executor.records.withLock { $0[step.id] }
            ?? StepReport(
                id: step.id, state: .skipped, method: step.request.method.rawValue, url: step.request.url.source
            )
        switch event.kind {
        case .succeeded:
            // A step skipped by a `when:` ends as a success of the graph's.
            if !report.skippedByCondition { report.state = .succeeded }
        case .failed(is CancellationError), .cancelled:
            // Cancelled by `failure: stop` after a failure, or with the run.
            report.markCancelled(stoppedBy: workflow.failurePolicy == .stop ? firstFailure : nil)
        case .failed(let error):
            report.state = .failed
            report.error = report.error ?? "\(error)"
            if firstFailure == nil { firstFailure = step.id }
        case .timedOut(let error):
            report.state = .failed
            report.error = "\(error)"
            if firstFailure == nil { firstFailure = step.id }
        case .skipped(let cause):
            report.state = .skipped
            report.cause = cause
            report.error = "skipped because '\(short: cause)' did not succeed"
        case .added, .started, .retrying:
            return nil
        }
        report.ended = report.ended ?? executor.elapsed()
        return report
    }
}

extension StepReport {
    /// Marks a step that was running as cancelled: because `stoppedBy` failed under
    /// `failure: stop`, or (`nil`) with the run.
    mutating func markCancelled(stoppedBy: String?) {
        state = .cancelled
        cause = stoppedBy
        error = stoppedBy.map { "cancelled because '\(short: $0)' failed (failure: stop)" } ?? "cancelled"
    }
}
