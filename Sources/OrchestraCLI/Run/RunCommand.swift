import ArgumentParser
import Foundation
import Orchestra
import OrchestraHTTP
import OrchestraPostgres
import OrchestraWorkflow

/// `orchestra run FILE`: runs a workflow of HTTP requests and reports each step.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a workflow of HTTP requests described in YAML or JSON.",
        discussion: """
            Steps run as soon as the steps they need have succeeded, independent steps in \
            parallel (at most 'limit' at once). A line is printed as each step ends, then a \
            summary; on a terminal, a for_each step also shows a progress bar while its \
            requests run. See Examples/README.md for the file format.

            Ctrl-C (SIGINT) or SIGTERM cancels the run: the steps in flight are reported \
            cancelled, the summary (or the JSON document) and the trace are still written, and \
            the command exits 130 (SIGINT) or 143 (SIGTERM). A second Ctrl-C exits at once, \
            without a report.

            With --state FILE the run is resumable: every request's outcome is recorded in FILE \
            as it ends, and running the same command again sends only what has not succeeded \
            (captures of the rest are reused). A request that is not safe to send twice (POST, \
            PATCH without an Idempotency-Key header) and was in flight when a run stopped is \
            reported as "may have been sent", not sent again, unless its step says \
            resend_on_resume: true or --resend-uncertain is given. 'orchestra status --state \
            FILE' shows where the run stands.

            With --state postgres://user:password@host:port/database the requests are sent by \
            'orchestra worker' processes on any machines that reach the database, the \
            workflow's limits holding across all of them; this process evaluates the workflow \
            and reads their responses back. --run-id goes on with the run of a coordinator that \
            stopped, with the same workflow file (an edited one is refused unless --force). A request not safe to send twice is sent at most once there too: one whose \
            worker died while sending it is reported as "may have been sent" (--run-id with \
            --resend-uncertain sends it). See Examples/README.md, "Across machines".

            Exit status: 0 every step succeeded, 1 a step failed (or was skipped or cancelled) or \
            an output could not be written (standard output, a report, the trace, the cookie jar: \
            each is tried, each failure said), 2 the file, an output path or the command line is \
            invalid (nothing is sent), 3 the --state postgres://… store could not be reached \
            within --wait-for-store (nothing is sent; trying again later may work), 130 / 143 \
            interrupted by SIGINT / SIGTERM.
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @OptionGroup var options: WorkflowFileOptions

    @OptionGroup var transportOptions: TransportOptions

    @Option(
        help: ArgumentHelp(
            """
            The largest response body held in memory, decoded (512KB, 64MB, 1GB); a step's max_body wins. \
            Bodies nothing reads and save_to: files are streamed, not limited.
            """,
            valueName: "size"))
    var maxBody = ByteSizeArgument(bytes: 64 << 20)

    @Option(
        help: ArgumentHelp(
            "Requests started per interval over all hosts (50/s, 300/min, 5000/h), in place of the file's rate:.",
            valueName: "rate"))
    var rate: RateArgument?

    @Option(
        help: ArgumentHelp(
            "text (a line per step and a summary) or json (one document on stdout, nothing else).", valueName: "format")
    )
    var output: Output = .text

    @Option(
        help: ArgumentHelp(
            "Write the run's Chrome Trace Event JSON and an HTML timeline into this folder.", valueName: "dir"))
    var trace: String?

    @Option(
        name: .customLong("cookie-jar"),
        help: ArgumentHelp(
            "Load the run's cookies from this file if it exists, and save them to it after the run (Netscape format, as curl and Hurl use; created 0600).",
            valueName: "file"))
    var cookieJarPath: String?

    @Flag(
        name: [.short, .long],
        help:
            "Print each request and response on stderr (headers, text bodies up to 2 KB, times), secrets redacted."
    )
    var verbose = false

    @OptionGroup var curlOptions: CurlOptions

    @Option(
        help: ArgumentHelp(
            "With --data: how many rows run at once (default 1). The workflow's limits and its one login hold across all of them.",
            valueName: "rows"))
    var parallel: Int = 1

    @Option(
        name: .customLong("report-junit"),
        help: ArgumentHelp(
            "Write a JUnit XML report (a test case per step and per for_each element) for CI.", valueName: "file"))
    var reportJUnit: String?

    @Option(
        name: .customLong("report-html"),
        help: ArgumentHelp(
            "Write a self-contained HTML report: the timeline, each step's request and response, assertions and failures.",
            valueName: "file"))
    var reportHTML: String?

    @Flag(name: .long, help: "Turn colours off (as NO_COLOR does).")
    var noColor = false

    @Option(
        help: ArgumentHelp(
            "Record every request's outcome in this file (SQLite) as it ends; run again with the same file to send only what has not succeeded. Or a PostgreSQL URL (postgres://…): hand every request to the workers of that store (orchestra worker).",
            valueName: "file|url"))
    var state: String?

    @Option(help: ArgumentHelp("With --state postgres://…: the schema of the store.", valueName: "name"))
    var schema: String?

    @Option(
        name: .customLong("run-id"),
        help: ArgumentHelp(
            "With --state postgres://…: the run's id (default: the file's name and the time). Give the id of a run whose coordinator stopped to go on with it: requests with a stored outcome are not sent again.",
            valueName: "id"))
    var runID: String?

    @Flag(
        help:
            "With --state FILE: use a state file written for another version of the workflow file. With --state postgres://… and --run-id: go on with a run opened by another version of it."
    )
    var force = false

    @Option(
        name: .customLong("wait-for-store"),
        help: ArgumentHelp(
            "With --state postgres://…: seconds to wait for a database that cannot be reached (down, starting up, out of connections), at start and in each outage during the run; 0 does not wait. Default 60 at start, 120 in an outage.",
            valueName: "seconds"))
    var waitForStore: Int?

    @Flag(
        name: .customLong("resend-uncertain"),
        help:
            "With --state: send again the requests an earlier run stopped with in flight that are not safe to send twice (reported as \"may have been sent\" otherwise)."
    )
    var resendUncertain = false

    /// Whether `--state` names a PostgreSQL store: the requests go to its workers.
    private var isDistributed: Bool { state.map(StoreStatus.isPostgresURL) ?? false }

    /// The flags that choose how the command runs (``RunMode``).
    var flags: RunFlags {
        RunFlags(
            state: state, schema: schema, runID: runID, data: options.data, force: force,
            resendUncertain: resendUncertain, parallel: parallel, trace: trace, cookieJar: cookieJarPath,
            waitForStore: waitForStore)
    }

    /// Each mode checks the flags it takes (``RunMode``).
    func validate() throws {
        _ = try RunMode(flags)
    }

    /// The printer of the run's lines, after printing the workflow's name (text output).
    private func startPrinting(_ workflow: Workflow) -> RunPrinter {
        let console = Console.standardOutput(noColor: noColor)
        if output == .text, let name = workflow.name {
            console.line(console.paint(TerminalText.safe(name), .bold))
        }
        return RunPrinter(console: console, width: workflow.steps.map { RunPrinter.shown($0.id).count }.max() ?? 0)
    }

    /// The runner of `workflow` over `transport`, as the options ask: the reports kept, the
    /// `--verbose` log, the `--cookie-jar` jar.
    private func runner(
        _ workflow: Workflow, transport: any HTTPTransport, cookieJar: CookieJar?, state: WorkflowState? = nil,
        rateEvents: RateEventRelay? = nil
    ) -> WorkflowRunner {
        let log = verbose ? VerboseLog(redactor: workflow.redactor, console: .standardError) : nil
        var onRateEvent: (@Sendable (HTTPRateEvent) -> Void)?
        if log != nil || rateEvents != nil {
            onRateEvent = { event in
                log?.rateChanged(event)
                rateEvents?.send(event)
            }
        }
        return WorkflowRunner(
            workflow: workflow, transport: transport, userAgent: OrchestraVersion.userAgent,
            keepsItemReports: keepsItemReports,
            observer: CurlLog.observer(
                log.map { log in { @Sendable in log.write($0) } },
                curlOptions.log(redactor: workflow.redactor, transport: transportOptions, tls: workflow.tls)),
            cookieJar: cookieJar, state: state, resendsUncertain: resendUncertain,
            onRetry: log.map { log in { @Sendable in log.retrying($0, $1) } },
            bodies: ResponseBodyOptions(maximumSize: maxBody.bytes, holdsUnread: verbose),
            onRateEvent: onRateEvent, onPoll: log.map { log in { @Sendable in log.polled($0, $1, next: $2) } })
    }

    /// The `--state` file, opened for this run; `nil` without the option.
    ///
    /// - Throws: `ExitCode(2)` after saying what is wrong with the file.
    private func openState(for workflow: Workflow) throws -> WorkflowState? {
        guard let state else { return nil }
        do throws(WorkflowStateError) {
            return try WorkflowState.open(path: state, workflow: workflow, force: force)
        } catch {
            Console.standardError.line("orchestra run: error: --state: \(TerminalText.safe(error.description))")
            throw ExitCode(2)
        }
    }

    /// Whether each `for_each` element's report is kept: the JSON document, the trace and the
    /// reports list them; the text lines need only the counts.
    private var keepsItemReports: Bool {
        output == .json || trace != nil || reportJUnit != nil || reportHTML != nil
    }

    func run() async throws {
        var (loaded, rows) = try options.loadWithRows()
        // A proxy's password is redacted like the file's secrets (a proxy may pass it on).
        loaded.secretValues += transportOptions.proxyPasswords()
        if let rate { loaded.rate = rate.rate }
        let workflow = loaded
        if let rows {
            try await run(workflow, rows: rows)
            return
        }
        try checkOutputPaths()
        let cookieJar = try loadCookieJar()
        let stateFile = isDistributed ? nil : try openState(for: workflow)
        let printer = startPrinting(workflow)
        let console = printer.console
        let text = output == .text
        // With --verbose the exchanges go to the terminal too: a bar redrawn in place would cut them.
        let progress = RunProgress(printer: printer, showsBar: !verbose)
        let signals = TerminationSignals.install(command: "orchestra run", acknowledging: "cancelling the run") { _ in
            progress.interrupt()
        }
        // Each element of a `for_each` is listed only where it is written out: the JSON
        // document and the trace. The text report needs only the counts. The first signal
        // cancels the run; the runner still returns a report, in which the steps that were in
        // flight are cancelled.
        // Handed to workers, the hosts' rates are held in the store's claims, not here too,
        // and a server's pause holds the jobs the store has for its host.
        let runnerWorkflow = isDistributed ? workflow.leavingHostRatesToTheStore : workflow
        let rateEvents = RateEventRelay()
        // Handed to workers, the steps' figures are kept in the run for `orchestra status` (a
        // state file's records give them).
        let steps = isDistributed ? WorkflowStepTally(workflow: workflow) : nil
        let run = { @Sendable (transport: any HTTPTransport) async throws -> WorkflowReport in
            let runner = self.runner(
                runnerWorkflow, transport: transport, cookieJar: cookieJar, state: stateFile, rateEvents: rateEvents)
            return try await signals.cancellingOnSignal {
                await runner.run { event in
                    steps?.observe(event)
                    if text { progress.handle(event) }
                }
            }
        }
        var report: WorkflowReport
        var distributed: DistributedRun.Summary?
        if isDistributed, let state {
            (report, distributed) = try await runDistributed(
                workflow, state: state, console: console, signals: signals, rateEvents: rateEvents, steps: steps, run)
            // The store held the hosts' rates: the report names them as a local run's does.
            report.hosts = workflow.limits.namingHostRates(in: report.hosts)
        } else {
            // The transport opens as many connections to a host as the workflow may use at once.
            report = try await transportOptions.withTransport(
                connectionsPerHost: workflow.limits.connectionsPerHost, tls: workflow.tls, command: "orchestra run", run
            )
        }
        if text { progress.finish(report) }
        switch output {
        case .text:
            printer.summary(of: report)
            printer.rateLines(of: report)
            if let stateFile { printer.stateLine(stateFile, report: report) }
            if let distributed { printer.distributedLine(distributed) }
        case .json: console.write(RunPrinter.json(of: report, file: options.file).prettyText + "\n")
        }
        var complete = true
        if let failure = stateFile?.failure {
            Console.standardError.line(
                "orchestra run: error: --state: \(TerminalText.safe(failure.description)); the outcomes since were not recorded, and a resume sends those requests again"
            )
            complete = false
        }
        // Each file is written whatever became of the others; then stdout and stderr are checked.
        complete =
            writeFiles(
                cookieJar: cookieJar, trace: report, workflow: workflow,
                reports: [RunReports.Suite(name: nil, report: report)], duration: report.duration, notes: console)
            && complete
        complete = reportConsoleFailures() && complete
        if !complete { throw ExitCode(1) }
        if let signal = signals.received { throw ExitCode(signal.exitStatus) }
        if !report.allSucceeded { throw ExitCode(1) }
    }

    /// `--state postgres://…`: runs `run` with the transport that hands the requests to the
    /// store's workers, in the run `--run-id` names (a new one by default).
    ///
    /// - Throws: `ExitCode(2)` after saying why the store or the run cannot be used; `ExitCode(1)`
    ///   if the store fails once the run has started.
    private func runDistributed(
        _ workflow: Workflow, state: String, console: Console, signals: TerminationSignals, rateEvents: RateEventRelay,
        steps: WorkflowStepTally?, _ run: @escaping @Sendable (any HTTPTransport) async throws -> WorkflowReport
    ) async throws -> (WorkflowReport, DistributedRun.Summary) {
        let runID = self.runID ?? DistributedRun.newRunID(file: options.file)
        var distributed = DistributedRun(url: state, schema: schema ?? "orchestra", runID: runID, workflow: workflow)
        distributed.resendsUncertain = resendUncertain
        distributed.force = force
        if let waitForStore {
            distributed.waitForStore = .seconds(waitForStore)
            distributed.outageTolerance = .seconds(waitForStore)
        }
        let started = Locked(false)
        let text = output == .text
        do {
            return try await distributed.run(
                announce: { line in
                    started.withLock { $0 = true }
                    (text ? console : Console.standardError).line(console.paint("state: \(line)", .dim))
                },
                waitingNote: { Console.standardError.line("orchestra run: note: \($0)") },
                cancelled: { signals.received != nil }, rateEvents: rateEvents,
                hostFigures: { report in
                    workflow.limits.namingHostRates(in: report.hosts).map { host in
                        DurableHostFigures(
                            host: host.host, requests: host.requestsSent,
                            rate: host.configuredRate.map(HTTPRateEvent.text),
                            effectiveRate: host.effectiveRate.map(HTTPRateEvent.text),
                            tooManyRequests: host.tooManyRequests, pauses: host.pauses)
                    }
                },
                steps: steps, run)
        } catch {
            let opened = started.withLock { $0 }
            Console.standardError.line("orchestra run: error: --state: \(TerminalText.safe("\(error)"))")
            throw ExitCode(opened ? 1 : StoreConnectivity.exitStatus(openingFailedWith: error))
        }
    }

    /// `--data`: the workflow once per row, `--parallel` rows at a time; a line per row as it
    /// ends, then a summary (or one JSON document).
    private func run(_ workflow: Workflow, rows: DataRows) async throws {
        try checkOutputPaths()
        let printer = startPrinting(workflow)
        let console = printer.console
        let text = output == .text
        let signals = TerminationSignals.install(command: "orchestra run", acknowledging: "cancelling the run") { _ in
        }
        let total = rows.rows.count
        let report = try await transportOptions.withTransport(
            connectionsPerHost: workflow.limits.connectionsPerHost, tls: workflow.tls, command: "orchestra run"
        ) { transport in
            let runner = self.runner(workflow, transport: transport, cookieJar: nil)
            return try await signals.cancellingOnSignal {
                await runner.run(rows: rows.rows, parallel: parallel) { row in
                    if text { console.write(printer.lines(for: row, of: total)) }
                }
            }
        }
        switch output {
        case .text: printer.summary(of: report)
        case .json:
            console.write(
                RunPrinter.json(of: report, workflow: workflow.name, file: options.file, dataFile: options.data ?? "")
                    .prettyText + "\n")
        }
        let written = writeFiles(
            cookieJar: nil, trace: nil, workflow: workflow,
            reports: report.rows.map {
                RunReports.Suite(name: "row \($0.index + 1)", report: $0.report, offset: $0.started ?? .zero)
            },
            duration: report.duration, notes: console)
        if !(reportConsoleFailures() && written) { throw ExitCode(1) }
        if let signal = signals.received { throw ExitCode(signal.exitStatus) }
        if !report.allSucceeded { throw ExitCode(1) }
    }
}
