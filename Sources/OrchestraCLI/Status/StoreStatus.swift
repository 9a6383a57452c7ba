import ArgumentParser
import Foundation
import Logging
import OrchestraDurable
import OrchestraHTTP
import OrchestraPostgres
import OrchestraWorkflow

/// `orchestra status --state postgres://…`: the most recent durable runs of a PostgreSQL store,
/// read without changing anything.
struct StoreStatus {
    let url: String
    let schema: String
    let runID: String?
    let last: Int
    let output: StatusCommand.Output
    let noColor: Bool

    /// Whether `state` names a PostgreSQL server rather than a state file.
    static func isPostgresURL(_ state: String) -> Bool {
        state.hasPrefix("postgres://") || state.hasPrefix("postgresql://")
    }

    /// Prints the runs; exits 1 if one is not done or did not succeed, 2 if the store cannot be
    /// read, 3 if its server cannot be reached.
    func show() async throws {
        let summaries: [DurableRunSummary]
        let location: String
        let paces: [String: [DurableResourcePace]]
        let hosts: [String: [DurableHostFigures]]
        let steps: [String: [WorkflowStateSummary.Step]]
        do {
            (summaries, location, paces, hosts, steps) = try await PostgresJobStore.withStore(
                url: url, schema: schema, pollInterval: nil,
                logger: Logger(label: "orchestra.postgres", factory: { _ in SwiftLogNoOpLogHandler() }),
                migrating: false
            ) { store in
                let summaries = try await store.runSummaries(id: runID, limit: last)
                var paces: [String: [DurableResourcePace]] = [:]
                var hosts: [String: [DurableHostFigures]] = [:]
                var steps: [String: [WorkflowStateSummary.Step]] = [:]
                for summary in summaries {
                    // A store of an older schema (not migrated: status only reads) has no rates.
                    let found = (try? await store.resourcePaces(of: summary.run.id)) ?? []
                    if !found.isEmpty { paces[summary.run.id] = found }
                    let seen = (try? await store.hosts(of: summary.run.id)) ?? []
                    if !seen.isEmpty { hosts[summary.run.id] = seen }
                    let judged = (try? await store.steps(of: summary.run.id)) ?? []
                    if !judged.isEmpty { steps[summary.run.id] = judged.map(Self.step(of:)) }
                }
                return (summaries, store.location, paces, hosts, steps)
            }
        } catch {
            Console.standardError.line("orchestra status: error: --state: \(TerminalText.safe("\(error)"))")
            throw ExitCode(StoreConnectivity.exitStatus(openingFailedWith: error))
        }
        if let runID, summaries.isEmpty {
            Console.standardError.line(
                "orchestra status: error: --run: there is no run '\(TerminalText.safe(runID))' in schema '\(TerminalText.safe(schema))' at \(TerminalText.safe(location))"
            )
            throw ExitCode(2)
        }
        let console = Console.standardOutput(noColor: noColor)
        switch output {
        case .text:
            console.write(
                text(summaries, location: location, paces: paces, hosts: hosts, steps: steps, console: console))
        case .json:
            console.write(
                json(summaries, location: location, paces: paces, hosts: hosts, steps: steps).prettyText + "\n")
        }
        if !summaries.allSatisfy({ Self.isComplete($0, steps: steps[$0.run.id]) }) { throw ExitCode(1) }
    }

    /// The store, then a table of the runs (with one run shown, its steps as a state file's are).
    func text(
        _ summaries: [DurableRunSummary], location: String, paces: [String: [DurableResourcePace]] = [:],
        hosts: [String: [DurableHostFigures]] = [:], steps: [String: [WorkflowStateSummary.Step]] = [:],
        console: Console
    ) -> String {
        var lines = [
            console.paint("PostgreSQL store \(TerminalText.quoted(schema)) at \(TerminalText.safe(location))", .bold)
        ]
        guard !summaries.isEmpty else { return (lines + ["no runs"]).map { $0 + "\n" }.joined() }
        // uncertain: may have been sent, not sent again (DurableJobOptions.atMostOnce).
        // The jobs by state, then (a workflow's run) its steps done as its coordinator judged them.
        let header = [
            "run", "state", "succeeded", "failed", "uncertain", "skipped", "running", "waiting", "workers",
            "steps done", "started",
        ]
        let rows = summaries.map { summary -> [String] in
            let jobs = summary.jobs
            let count = { (states: [DurableJobState]) in "\(states.reduce(0) { $0 + (jobs[$1] ?? 0) })" }
            let done = steps[summary.run.id].map { "\($0.count(where: \.isDone))/\($0.count)" } ?? "–"
            return [
                TerminalText.quoted(summary.run.id), summary.run.state.rawValue, count([.succeeded]),
                count([.failed]), count([.uncertain]), count([.skipped, .cancelled]), count([.running]),
                count([.ready, .blocked]), "\(summary.workers)", done, StatusCommand.timestamp(summary.run.created),
            ]
        }
        let marks = summaries.map { summary in
            switch summary.run.state {
            case .succeeded where !Self.isComplete(summary, steps: steps[summary.run.id]):
                console.paint("✗", .red)
            case .succeeded: console.paint("✓", .green)
            case .running: console.paint("…", .yellow)
            case .failed, .cancelled: console.paint("✗", .red)
            }
        }
        lines += StatusCommand.table(header: header, rows: rows, marks: marks, console: console)
        // Each run's paced hosts: its rate, the requests started, a pause still ahead.
        for summary in summaries {
            for pace in paces[summary.run.id] ?? [] {
                var line = "  \(TerminalText.quoted(summary.run.id)) · \(TerminalText.safe(pace.resource))"
                if let rate = pace.rate {
                    line += " · \(HTTPRateEvent.text(rate))" + (pace.burst > 1 ? " (burst \(pace.burst))" : "")
                }
                line += " · \(Format.count(pace.attempts, "request")) started"
                if let until = pace.pausedUntil { line += " · paused until \(StatusCommand.timestamp(until))" }
                lines.append(console.paint(line, .dim))
            }
            // What its coordinators saw: the server's rate, 429s, pauses.
            for host in hosts[summary.run.id] ?? [] {
                let line = Format.hostPace(
                    host.host, requests: host.requests, rate: host.rate, effectiveRate: host.effectiveRate,
                    tooManyRequests: host.tooManyRequests, pauses: host.pauses)
                lines.append(console.paint("  \(TerminalText.quoted(summary.run.id)) · " + line, .dim))
            }
        }
        // One run shown: its steps as its coordinator judged them, as a state file's are shown.
        if summaries.count == 1, let summary = summaries.first, let steps = steps[summary.run.id] {
            lines += StatusCommand.stepLines(steps, console: console)
            lines.append(StatusCommand.doneLine(steps, console: console))
        }
        let going = summaries.count { $0.run.state == .running }
        lines.append(
            console.paint(
                "\(Format.count(summaries.count, "run")) shown, \(going) still running",
                going == 0 && summaries.allSatisfy { Self.isComplete($0, steps: steps[$0.run.id]) }
                    ? .green : .yellow))
        return lines.map { $0 + "\n" }.joined()
    }

    /// Whether a run is done and everything in it succeeded: every job, and, for a workflow's
    /// run, every step as its coordinator judged it (`steps`; a job whose request got a
    /// response has succeeded, whatever the response).
    static func isComplete(_ summary: DurableRunSummary, steps: [WorkflowStateSummary.Step]?) -> Bool {
        summary.run.state == .succeeded && (steps?.allSatisfy(\.isDone) ?? true)
    }

    /// A host as the run's coordinators saw it: `host`, `requests`, `rate`, `effective_rate`,
    /// `too_many_requests`, `pauses`.
    static func json(of host: DurableHostFigures) -> JSONValue {
        StatusCommand.hostJSON(
            host.host, requests: host.requests, rate: host.rate, effectiveRate: host.effectiveRate,
            tooManyRequests: host.tooManyRequests, pauses: host.pauses)
    }

    /// A paced resource: `resource`, `rate` (`30/s` or `null`), `burst`, `jobs`, `requests`
    /// (the attempts claimed), `paused_until` (or `null`).
    static func json(of pace: DurableResourcePace) -> JSONValue {
        let rate: JSONValue = pace.rate.map { .string(HTTPRateEvent.text($0)) } ?? .null
        let paused: JSONValue = pace.pausedUntil.map { .string(StatusCommand.timestamp($0)) } ?? .null
        return .object([
            "resource": .string(pace.resource), "rate": rate, "burst": .integer(pace.burst),
            "jobs": .integer(pace.jobs), "requests": .integer(pace.attempts), "paused_until": paused,
        ])
    }

    /// A step's figures as the store keeps them.
    static func step(of figures: DurableStepFigures) -> WorkflowStateSummary.Step {
        var step = WorkflowStateSummary.Step(id: figures.step, forEach: figures.forEach)
        step.total = figures.total
        step.succeeded = figures.succeeded
        step.failed = figures.failed
        step.maybeSent = figures.maybeSent
        step.skipped = figures.skipped
        return step
    }

    /// `{"store", "schema", "runs": [{"id", "state", "created", "ended", "limit", "workers", "jobs": {state: n}, "resources": […], "hosts": […], "steps": […], "complete"}]}`;
    /// `steps` as a state file's (empty for a run no coordinator recorded them for),
    /// `complete` as ``isComplete(_:steps:)``.
    func json(
        _ summaries: [DurableRunSummary], location: String, paces: [String: [DurableResourcePace]] = [:],
        hosts: [String: [DurableHostFigures]] = [:], steps: [String: [WorkflowStateSummary.Step]] = [:]
    ) -> JSONValue {
        let runs: [JSONValue] = summaries.map { summary in
            let resources: [JSONValue] = (paces[summary.run.id] ?? []).map(Self.json(of:))
            let seen: [JSONValue] = (hosts[summary.run.id] ?? []).map(Self.json(of:))
            let jobs = DurableJobState.allCases.map { JSONValue.Member($0.rawValue, .integer(summary.jobs[$0] ?? 0)) }
            let ended: JSONValue = summary.run.ended.map { .string(StatusCommand.timestamp($0)) } ?? .null
            return .object([
                "id": .string(summary.run.id),
                "state": .string(summary.run.state.rawValue),
                "created": .string(StatusCommand.timestamp(summary.run.created)),
                "ended": ended,
                "limit": .integer(summary.run.limit),
                "workers": .integer(summary.workers),
                "jobs": .object(jobs),
                "resources": .array(resources),
                "hosts": .array(seen),
                "steps": .array((steps[summary.run.id] ?? []).map(StatusCommand.json(of:))),
                "complete": .bool(Self.isComplete(summary, steps: steps[summary.run.id])),
            ])
        }
        return .object(["store": .string(location), "schema": .string(schema), "runs": .array(runs)])
    }
}
