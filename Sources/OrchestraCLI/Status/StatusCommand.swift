import ArgumentParser
import Foundation
import OrchestraWorkflow

/// `orchestra status --state FILE`: where a resumable run stands; `--state postgres://…`:
/// the durable runs of a PostgreSQL store.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where a resumable run stands (--state FILE), or the durable runs of a PostgreSQL store.",
        discussion: """
            --state FILE: for each step of the workflow, in file order, how many of its \
            requests succeeded, failed, may have been sent (in flight when a run stopped, not \
            safe to send twice) and are still to be sent, or that its 'when:' skipped it. The \
            file is only read: a run may be using it. --backup COPY also copies it to the new file COPY in one consistent \
            snapshot (SQLite's backup API), even while a run uses it: copying the file alone \
            during a run gives a copy behind the run (its last records are in FILE-wal), which \
            'orchestra run --state' refuses to resume from without --force.

            --state postgres://user:password@host:port/database: the most recent durable runs \
            of the store in --schema, newest first: each run's state, its jobs by state, how \
            many workers run them now, how many of a workflow's steps are done, and each \
            host's rate, requests and 429s; with one run \
            shown (--run ID), also the table of its steps a state file gives, as the run's \
            coordinator judged them (written every 2 s while it runs). Only read; workers may be running.

            Exit status: 0 every request (every listed run) succeeded or its step was skipped \
            by a 'when:', 1 some are still to be sent or did not succeed (for a workflow's run, as its coordinator judged its steps), 2 the state cannot be read, 3 the PostgreSQL store's \
            server cannot be reached (trying again later may work).
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(
        help: ArgumentHelp(
            "The state file of 'orchestra run --state', or a PostgreSQL URL (postgres://…).", valueName: "file|url"))
    var state: String

    @Option(help: ArgumentHelp("With a PostgreSQL URL: the schema of the store.", valueName: "name"))
    var schema = "orchestra"

    @Option(help: ArgumentHelp("With a PostgreSQL URL: show this run only.", valueName: "id"))
    var run: String?

    @Option(help: ArgumentHelp("With a PostgreSQL URL: show at most this many runs.", valueName: "n"))
    var last = 20

    @Option(help: ArgumentHelp("text (a table) or json (one document on stdout).", valueName: "format"))
    var output: Output = .text

    @Option(
        help: ArgumentHelp(
            "With a state file: copy it to this new file, in one consistent snapshot, even while a run uses it.",
            valueName: "copy"))
    var backup: String?

    @Flag(name: .long, help: "Turn colours off (as NO_COLOR does).")
    var noColor = false

    func validate() throws {
        let isURL = StoreStatus.isPostgresURL(state)
        if isURL, backup != nil {
            throw ValidationError("--backup applies to a state file, not a PostgreSQL URL (use pg_dump)")
        }
        if !isURL, schema != "orchestra" || run != nil || last != 20 {
            throw ValidationError(
                "--schema, --run and --last apply to a PostgreSQL URL (postgres://…), not a state file")
        }
        guard last >= 1 else { throw ValidationError("--last must be at least 1, got \(last)") }
    }

    func run() async throws {
        if StoreStatus.isPostgresURL(state) {
            try await StoreStatus(url: state, schema: schema, runID: run, last: last, output: output, noColor: noColor)
                .show()
            return
        }
        let summary: WorkflowStateSummary
        do throws(WorkflowStateError) {
            if let backup {
                summary = try WorkflowStateSummary.backup(path: state, to: backup)
            } else {
                summary = try WorkflowStateSummary.read(path: state)
            }
        } catch {
            Console.standardError.line("orchestra status: error: --state: \(TerminalText.safe(error.description))")
            throw ExitCode(2)
        }
        let console = Console.standardOutput(noColor: noColor)
        switch output {
        case .text: console.write(Self.text(of: summary, path: state, console: console))
        case .json: console.write(Self.json(of: summary, path: state).prettyText + "\n")
        }
        if let backup {
            Console.standardError.line(
                "orchestra status: backed up \(TerminalText.quoted(state)) to \(TerminalText.quoted(backup))"
                    + (summary.openRun.map {
                        "; run \($0) was using it (or stopped without ending): what it does after this is not in the copy, and a resume from the copy needs --force"
                    } ?? ""))
        }
        if !summary.isComplete { throw ExitCode(1) }
    }

    /// The workflow, the file's history and a table of the steps.
    static func text(of summary: WorkflowStateSummary, path: String, console: Console) -> String {
        let name = summary.name.map { "\(TerminalText.safe($0)) · " } ?? ""
        var lines = [
            console.paint("\(name)\(TerminalText.quoted(summary.file))", .bold),
            "state: \(TerminalText.quoted(path)) · \(Format.count(summary.runs, "run")) · last written \(timestamp(summary.updated))",
        ]
        lines += stepLines(summary.steps, console: console)
        if let open = summary.openRun {
            lines.insert(
                console.paint(
                    "run \(open) has not ended in this file: it is running, or it stopped without ending (a crash, a kill)",
                    .yellow), at: 2)
        }
        if !summary.hosts.isEmpty {
            let rows = summary.hosts.map { host in
                [
                    TerminalText.safe(host.host), "\(host.requests)", host.rate ?? "–", host.effectiveRate ?? "–",
                    "\(host.tooManyRequests)", "\(host.pauses)",
                ]
            }
            lines += table(
                header: ["host", "requests", "rate", "server's rate", "429s", "pauses"], rows: rows,
                marks: rows.map { _ in " " }, console: console)
        }
        lines.append(doneLine(summary.steps, console: console))
        return lines.map { $0 + "\n" }.joined()
    }

    /// A table of the steps, in file order: how many of each one's requests succeeded, failed,
    /// may have been sent and are still to be sent (or that a `when:` skipped it), each row
    /// after a mark. The same for a state file's run and a PostgreSQL store's.
    static func stepLines(_ steps: [WorkflowStateSummary.Step], console: Console) -> [String] {
        let header = ["step", "succeeded", "failed", "may have been sent", "pending"]
        let rows = steps.map { step -> [String] in
            let pending: String
            if step.skipped {
                pending = "skipped (when)"
            } else if let count = step.pending {
                pending = step.forEach ? "\(count) of \(step.total ?? 0)" : "\(count)"
            } else {
                pending = "list not read yet"
            }
            return [
                TerminalText.quoted(step.id), "\(step.succeeded)", "\(step.failed)", "\(step.maybeSent)", pending,
            ]
        }
        let marks = steps.map { step in
            if step.skipped { return console.paint("–", .dim) }
            if step.isDone { return console.paint("✓", .green) }
            return step.failed + step.maybeSent > 0 ? console.paint("✗", .red) : console.paint("…", .yellow)
        }
        return table(header: header, rows: rows, marks: marks, console: console)
    }

    /// `3 of 4 steps done`, green once every step is.
    static func doneLine(_ steps: [WorkflowStateSummary.Step], console: Console) -> String {
        let done = steps.count(where: \.isDone)
        return console.paint(
            "\(done) of \(Format.count(steps.count, "step")) done", done == steps.count ? .green : .yellow)
    }

    /// A table's lines: the header dimmed, the first column left-aligned and the others
    /// right-aligned, each row after its mark.
    static func table(header: [String], rows: [[String]], marks: [String], console: Console) -> [String] {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ row: [String]) -> String {
            row.enumerated().map { column, cell in
                column == 0 ? Format.left(cell, widths[column]) : Format.right(cell, widths[column])
            }.joined(separator: "  ")
        }
        return ["  " + console.paint(line(header), .dim)] + zip(marks, rows).map { "\($0) \(line($1))" }
    }

    /// `{"workflow", "file", "digest", "state", "runs", "open_run", "created", "updated", "complete", "hosts": […], "steps": […]}`.
    static func json(of summary: WorkflowStateSummary, path: String) -> JSONValue {
        .object([
            "workflow": summary.name.map(JSONValue.string) ?? .null,
            "file": .string(summary.file),
            "digest": .string(summary.digest),
            "state": .string(path),
            "runs": .integer(summary.runs),
            "open_run": summary.openRun.map(JSONValue.integer) ?? .null,
            "created": .string(timestamp(summary.created)),
            "updated": .string(timestamp(summary.updated)),
            "complete": .bool(summary.isComplete),
            "hosts": .array(summary.hosts.map(json(of:))),
            "steps": .array(summary.steps.map(json(of:))),
        ])
    }

    /// A step's figures: `id`, `for_each`, `total`, `succeeded`, `failed`,
    /// `may_have_been_sent`, `pending`, `skipped` (by a `when:`), `done`. The same for a state
    /// file's run and a PostgreSQL store's.
    static func json(of step: WorkflowStateSummary.Step) -> JSONValue {
        .object([
            "id": .string(step.id),
            "for_each": .bool(step.forEach),
            "total": step.forEach ? step.total.map(JSONValue.integer) ?? .null : .integer(1),
            "succeeded": .integer(step.succeeded),
            "failed": .integer(step.failed),
            "may_have_been_sent": .integer(step.maybeSent),
            "pending": step.pending.map(JSONValue.integer) ?? .null,
            "skipped": .bool(step.skipped),
            "done": .bool(step.isDone),
        ])
    }

    /// A host's figures over the runs: `host`, `requests`, `rate`, `effective_rate`,
    /// `too_many_requests`, `pauses`.
    static func json(of host: WorkflowStateSummary.Host) -> JSONValue {
        hostJSON(
            host.host, requests: host.requests, rate: host.rate, effectiveRate: host.effectiveRate,
            tooManyRequests: host.tooManyRequests, pauses: host.pauses)
    }

    /// A host's figures as JSON, for a state file's runs and a store's alike.
    static func hostJSON(
        _ host: String, requests: Int, rate: String?, effectiveRate: String?, tooManyRequests: Int, pauses: Int
    ) -> JSONValue {
        let rate: JSONValue = rate.map(JSONValue.string) ?? .null
        let effective: JSONValue = effectiveRate.map(JSONValue.string) ?? .null
        return .object([
            "host": .string(host), "requests": .integer(requests), "rate": rate, "effective_rate": effective,
            "too_many_requests": .integer(tooManyRequests), "pauses": .integer(pauses),
        ])
    }

    /// `2026-11-26T04:10:00Z`
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
