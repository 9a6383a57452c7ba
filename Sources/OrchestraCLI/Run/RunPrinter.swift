import Foundation
import OrchestraHTTP
import OrchestraWorkflow

/// How `orchestra run` prints: a line per step as it ends, a summary, or one JSON document.
struct RunPrinter: Sendable {
    let console: Console
    /// The longest step id, to align the lines.
    let width: Int

    /// At most this many failed elements of a `for_each` step are listed under it.
    static let failedItemsShown = 5

    /// `✓ login  POST http://127.0.0.1:8080/login → 200 · 12 ms`; for a `for_each` step,
    /// `✓ image  GET http://127.0.0.1:8080{{item.path | raw}} · 8 requests sent, 8 succeeded · 40 ms`
    /// and, if it failed, a line per failed element (at most ``failedItemsShown``). Each line
    /// ends with a newline.
    func lines(for step: StepReport) -> String {
        let id = Format.left(Self.shown(step.id), width)
        let request = "\(step.method) \(TerminalText.quoted(step.url))"
        let duration = step.duration.map { " · " + Format.milliseconds($0) } ?? ""
        var attempts = step.attempts > 1 && step.items == nil ? " · \(step.attempts) attempts" : ""
        if step.pollCount > 0, step.items == nil { attempts = Self.pollNote(step) }
        if step.recorded { attempts = console.paint(" · recorded by an earlier run, not sent", .dim) }
        if let counts = step.itemCounts {
            attempts = " · \(Format.count(counts.sent, "request")) sent, \(counts.succeeded) succeeded"
            if counts.recorded > 0 { attempts += " (\(counts.recorded) recorded by an earlier run)" }
        }
        var lines: [String]
        switch step.state {
        case .succeeded:
            let status = step.status.map { " → \($0)" } ?? ""
            let captures =
                step.captures.isEmpty
                ? "" : console.paint(" · captured " + step.captures.map(\.key).joined(separator: ", "), .dim)
            let note = step.note.map { console.paint(" · " + TerminalText.safe($0), .yellow) } ?? ""
            lines = ["\(console.paint("✓", .green)) \(id)  \(request)\(status)\(duration)\(attempts)\(captures)\(note)"]
        case .failed:
            let status = step.status.map { " → \($0)" } ?? ""
            let failedChecks = step.assertions.filter { !$0.passed }
            let error =
                failedChecks.isEmpty
                ? step.error ?? "failed"
                : Self.pollPrefix(of: step) + "\(failedChecks.count) of \(step.assertions.count) assertions failed:"
            lines = [
                "\(console.paint("✗", .red)) \(id)  \(request)\(status)\(duration)\(attempts)",
                "  \(String(repeating: " ", count: width))  \(console.paint(TerminalText.safe(error), .red))",
            ]
            // One line per failed check: `✗ $.user.name == "Ada": got "Bob"`.
            let indent = String(repeating: " ", count: width + 4)
            // A schema check's failures under it, one a line.
            lines += failedChecks.flatMap { check in
                guard !check.failures.isEmpty else {
                    return ["\(indent)\(console.paint("✗ " + TerminalText.safe(check.description), .red))"]
                }
                let title = "✗ \(check.subject) schema \(check.expected):"
                return ["\(indent)\(console.paint(TerminalText.safe(title), .red))"]
                    + check.failures.map { "\(indent)    \(console.paint(TerminalText.safe($0), .red))" }
            }
            lines += failedItems(of: step)
        case .skipped:
            lines = [
                "\(console.paint("–", .yellow)) \(id)  \(console.paint(TerminalText.safe(step.error ?? "skipped"), .dim))"
            ]
        case .cancelled:
            lines = [
                "\(console.paint("○", .yellow)) \(id)  \(console.paint(TerminalText.safe(step.error ?? "cancelled"), .dim))"
            ]
        }
        // The redirects followed, under the step's line: `↪ 302 → http://…/home`.
        let indent = String(repeating: " ", count: width + 4)
        lines.insert(
            contentsOf: step.redirects.map {
                indent + console.paint("↪ \($0.status) → \(TerminalText.quoted($0.location))", .dim)
            }, at: 1)
        // A body saved by `save_to:`: `⤓ downloads/a.png · 48,213 bytes · sha256 3f2a…`.
        if let saved = step.saved {
            lines.append(
                indent
                    + console.paint(
                        "⤓ \(TerminalText.quoted(saved.path)) · \(saved.bytes) bytes · sha256 \(saved.sha256)", .dim))
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// A step's id as the lines show it: a long one by its start and its length.
    static func shown(_ id: String) -> String {
        TerminalText.quoted(id)
    }

    /// `    ✗ image[3]  GET http://…/images/3 → 404: expected 2xx, got 404: …`
    private func failedItems(of step: StepReport) -> [String] {
        let failed = (step.items ?? []).filter { $0.state == .failed }
        let failedCount = step.itemCounts?.failed ?? failed.count
        let indent = String(repeating: " ", count: width + 4)
        var lines = failed.prefix(Self.failedItemsShown).map { item in
            let status = item.status.map { " → \($0)" } ?? ""
            return
                "\(indent)\(console.paint("✗", .red)) \(Self.shown(item.id))  \(item.method) \(TerminalText.quoted(item.url))\(status): \(console.paint(TerminalText.safe(item.error ?? "failed"), .red))"
        }
        if failedCount > Self.failedItemsShown {
            lines.append("\(indent)\(console.paint("… and \(failedCount - Self.failedItemsShown) more failed", .dim))")
        }
        return lines
    }

    /// For a `--data` run, as a row ends: `✓ row 3  3 steps succeeded · 12 ms`, or
    /// `✗ row 4  2 of 3 steps succeeded · 15 ms` followed by the lines of its steps that did
    /// not succeed, indented.
    func lines(for row: DataRunReport.Row, of total: Int) -> String {
        let report = row.report
        let label = Format.left("row \(row.index + 1)", "row \(total)".count)
        let time = " · \(Format.milliseconds(report.duration))"
        guard !report.allSucceeded else {
            return
                "\(console.paint("✓", .green)) \(label)  \(Self.succeededText(report))\(time)\n"
        }
        var text =
            "\(console.paint("✗", .red)) \(label)  \(report.count(.succeeded)) of \(Format.count(report.steps.count, "step")) succeeded\(time)\n"
        for step in report.steps where step.state != .succeeded {
            text += lines(for: step).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map {
                "    " + $0 + "\n"
            }.joined()
        }
        return text
    }

    /// `1000 rows × 3 steps: 998 succeeded, 2 failed · 3.2 s · auth: 1 login, 0 refreshes`;
    /// after a Ctrl-C, `…: 10 succeeded, 2 cancelled, 988 not run`: a row that never started
    /// is not a failure.
    func summary(of report: DataRunReport) {
        console.line(console.paint(summaryLine(of: report), report.allSucceeded ? .green : .red))
    }

    /// The line the summary of a `--data` run prints.
    func summaryLine(of report: DataRunReport) -> String {
        var line =
            "\(Format.count(report.rows.count, "row")) × \(Format.count(report.rows.first?.report.steps.count ?? 0, "step")): \(report.succeededRows) succeeded"
        for (count, what) in [
            (report.failedRows, "failed"), (report.cancelledRows, "cancelled"), (report.notStartedRows, "not run"),
        ] where count > 0 {
            line += ", \(count) \(what)"
        }
        line += " · \(Format.wallTime(report.duration))"
        if report.logins + report.refreshes > 0 {
            line +=
                " · auth: \(Format.count(report.logins, "login")), \(Format.count(report.refreshes, "refresh", plural: "refreshes"))"
        }
        return line
    }

    /// A `--data` run as one JSON document: `{"workflow", "file", "data", "rows": [{"row",
    /// "data", "started_ms", "duration_ms", "ok", "steps"}], "summary": {…}}`. The summary
    /// counts rows `succeeded`, `failed`, `cancelled` (started, then stopped by Ctrl-C) and
    /// `not_run` (never started).
    static func json(of report: DataRunReport, workflow: String?, file: String, dataFile: String) -> JSONValue {
        .object([
            "workflow": workflow.map(JSONValue.string) ?? .null,
            "file": .string(file),
            "data": .string(dataFile),
            "rows": .array(
                report.rows.map { row in
                    .object([
                        "row": .integer(row.index + 1),
                        "data": .object(
                            row.data.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, .string($0.value)) }),
                        "started_ms": milliseconds(row.started),
                        "duration_ms": milliseconds(row.report.duration),
                        "ok": .bool(row.report.allSucceeded),
                        "steps": .array(row.report.steps.map(json(of:))),
                    ])
                }),
            "hosts": .array(report.hosts.map(json(of:))),
            "rate_events": .array(report.rateEvents.map(json(of:))),
            "summary": .object([
                "rows": .integer(report.rows.count),
                "succeeded": .integer(report.succeededRows),
                "failed": .integer(report.failedRows),
                "cancelled": .integer(report.cancelledRows),
                "not_run": .integer(report.notStartedRows),
                "duration_ms": milliseconds(report.duration),
                "logins": .integer(report.logins),
                "refreshes": .integer(report.refreshes),
                "ok": .bool(report.allSucceeded),
            ]),
        ])
    }

    /// `4 steps: 3 succeeded, 1 failed · 0.42 s`
    func summary(of report: WorkflowReport) {
        var parts = ["\(report.count(.succeeded)) succeeded"]
        for state in [StepReport.State.failed, .skipped, .cancelled] where report.count(state) > 0 {
            parts.append("\(report.count(state)) \(state.rawValue)")
        }
        var line =
            "\(Format.count(report.steps.count, "step")): \(parts.joined(separator: ", ")) · \(Format.wallTime(report.duration))"
        if report.logins + report.refreshes > 0 {
            line +=
                " · auth: \(Format.count(report.logins, "login")), \(Format.count(report.refreshes, "refresh", plural: "refreshes"))"
        }
        console.line(console.paint(line, report.allSucceeded ? .green : .red))
    }

    /// A line per host whose pace mattered (a rate configured or announced, a 429, a pause):
    /// `rate: https://api.test:443 · 600 requests at 20/s · server: 10/s · 3 × 429, 1 pause`.
    func rateLines(of report: WorkflowReport) {
        for host in report.hosts
        where host.configuredRate != nil || host.effectiveRate != host.configuredRate || host.tooManyRequests > 0
            || host.pauses > 0
        {
            let line = Format.hostPace(
                host.host, requests: host.requestsSent, rate: host.configuredRate.map(HTTPRateEvent.text),
                effectiveRate: host.effectiveRate.map(HTTPRateEvent.text), tooManyRequests: host.tooManyRequests,
                pauses: host.pauses)
            console.line(console.paint("rate: " + line, .dim))
        }
    }

    /// `state: run.sqlite (run 2) · 4,200 requests recorded by earlier runs were not sent`
    func stateLine(_ state: WorkflowState, report: WorkflowReport) {
        let reused = report.steps.reduce(0) { $0 + ($1.itemCounts?.recorded ?? ($1.recorded ? 1 : 0)) }
        let uncertain = report.steps.reduce(0) { total, step in
            total + (step.items?.count(where: \.maybeSent) ?? (step.maybeSent ? 1 : 0))
        }
        var line = "state: \(TerminalText.quoted(state.path)) (run \(state.run))"
        if reused > 0 { line += " · \(Format.count(reused, "request")) recorded by earlier runs, not sent again" }
        if uncertain > 0 { line += " · \(uncertain) may have been sent (--resend-uncertain sends them)" }
        console.line(console.paint(line, .dim))
    }

    /// The line after the summary of a run handed to workers: the run, how it ended, what was
    /// sent and what an earlier coordinator's outcomes saved.
    func distributedLine(_ summary: DistributedRun.Summary) {
        // The run's own state says whether requests got responses, not whether the workflow
        // succeeded (the summary above says that): it is shown as closed or cancelled.
        let ending =
            summary.abandoned > 0
            ? "closed" : summary.state == .cancelled ? "cancelled" : summary.state == .running ? "still open" : "closed"
        var line =
            "state: run '\(TerminalText.safe(summary.runID))' \(ending) · \(Format.count(summary.requests, "request")) sent by workers"
        if summary.unanswered > 0 { line += ", \(summary.unanswered) without a response" }
        if summary.reused > 0 { line += " · \(summary.reused) read back from an earlier coordinator's run" }
        if summary.abandoned > 0 {
            line +=
                " · \(Format.count(summary.abandoned, "request")) given up on, cancelled so that no worker sends it later"
        }
        console.line(console.paint(line, .dim))
    }

    /// The whole run as one JSON document: `{"workflow", "file", "steps": […], "summary": {…}}`.
    static func json(of report: WorkflowReport, file: String) -> JSONValue {
        .object([
            "workflow": report.workflow.map(JSONValue.string) ?? .null,
            "file": .string(file),
            "steps": .array(report.steps.map(json(of:))),
            "hosts": .array(report.hosts.map(json(of:))),
            "rate_events": .array(report.rateEvents.map(json(of:))),
            "summary": .object([
                "steps": .integer(report.steps.count),
                "succeeded": .integer(report.count(.succeeded)),
                "failed": .integer(report.count(.failed)),
                "skipped": .integer(report.count(.skipped)),
                "cancelled": .integer(report.count(.cancelled)),
                "duration_ms": milliseconds(report.duration),
                "logins": .integer(report.logins),
                "refreshes": .integer(report.refreshes),
                "ok": .bool(report.allSucceeded),
            ]),
        ])
    }

    /// A pace change: `at_ms` (from the run's start), `host`, and `event` in words.
    private static func json(of record: RateEventRecord) -> JSONValue {
        .object([
            "at_ms": milliseconds(record.at), "host": .string(record.event.host),
            "event": .string(TerminalText.safe(record.event.description)),
        ])
    }

    /// A host's figures: `host`, `requests`, `rate` and `effective_rate` (`20/s`, or `null`: not
    /// limited), `too_many_requests` (429s) and `pauses`.
    private static func json(of host: HTTPHostRate) -> JSONValue {
        StatusCommand.hostJSON(
            host.host, requests: host.requestsSent, rate: host.configuredRate.map(HTTPRateEvent.text),
            effectiveRate: host.effectiveRate.map(HTTPRateEvent.text), tooManyRequests: host.tooManyRequests,
            pauses: host.pauses)
    }

    /// A step (or an element of a `for_each` step, under its `items`) as JSON; a `for_each`
    /// step whose list was read also has `item_counts` (`total`, `sent`, `succeeded`, `failed`,
    /// `cancelled`, `recorded`).
    private static func json(of step: StepReport) -> JSONValue {
        let fields: KeyValuePairs<String, JSONValue> = [
            "id": .string(step.id),
            "state": .string(step.state.rawValue),
            "method": .string(step.method),
            "url": .string(step.url),
            "status": step.status.map(JSONValue.integer) ?? .null,
            "attempts": .integer(step.attempts),
            "started_ms": milliseconds(step.started),
            "sent_ms": milliseconds(step.firstSent),
            "ended_ms": milliseconds(step.ended),
            "duration_ms": milliseconds(step.duration),
            "error": step.error.map(JSONValue.string) ?? .null,
            "cause": step.cause.map(JSONValue.string) ?? .null,
            "captures": .object(step.captures),
            "redirects": .array(
                step.redirects.map { .object(["status": .integer($0.status), "location": .string($0.location)]) }),
        ]
        var members = fields.map { JSONValue.Member($0.key, $0.value) }
        members.append(JSONValue.Member("assertions", .array(step.assertions.map(json(of:)))))
        // With --state: reused from the file, or not sent because it may have been.
        if step.recorded { members.append(JSONValue.Member("recorded", .bool(true))) }
        if step.maybeSent { members.append(JSONValue.Member("may_have_been_sent", .bool(true))) }
        if let saved = step.saved {
            members.append(
                JSONValue.Member(
                    "saved",
                    .object([
                        "path": .string(saved.path), "bytes": .integer(saved.bytes), "sha256": .string(saved.sha256),
                    ])))
        }
        if let bytes = step.bodyBytes { members.append(JSONValue.Member("body_bytes", .integer(bytes))) }
        if step.pollCount > 0 { members += pollMembers(of: step) }
        if step.skippedByCondition { members.append(JSONValue.Member("skipped_by_condition", .bool(true))) }
        if let note = step.note { members.append(JSONValue.Member("note", .string(note))) }
        if let items = step.items { members.append(JSONValue.Member("items", .array(items.map(json(of:))))) }
        // Every element, listed or not (those a Ctrl-C kept from starting are counted, not listed).
        if let counts = step.itemCounts {
            members.append(
                JSONValue.Member(
                    "item_counts",
                    .object([
                        "total": .integer(counts.total), "sent": .integer(counts.sent),
                        "succeeded": .integer(counts.succeeded), "failed": .integer(counts.failed),
                        "cancelled": .integer(counts.cancelled), "recorded": .integer(counts.recorded),
                    ])))
        }
        return .object(members)
    }

    /// One check of an assertion as JSON: `{"subject", "operator", "expected", "actual",
    /// "passed", "reason"}` (values as the messages quote them: JSON text), and a `schema`
    /// check's `failures` (`["/orders/0/id: expected integer, got string"]`).
    private static func json(of result: AssertionResult) -> JSONValue {
        var members: [JSONValue.Member] = [
            JSONValue.Member("subject", .string(result.subject)),
            JSONValue.Member("operator", .string(result.operatorName)),
            JSONValue.Member("expected", .string(result.expected)),
            JSONValue.Member("actual", result.actual.map(JSONValue.string) ?? .null),
            JSONValue.Member("passed", .bool(result.passed)),
            JSONValue.Member("reason", result.reason.map(JSONValue.string) ?? .null),
        ]
        if result.operatorName == "schema" {
            members.append(JSONValue.Member("failures", .array(result.failures.map(JSONValue.string))))
        }
        return .object(members)
    }

    private static func milliseconds(_ duration: Duration?) -> JSONValue {
        guard let duration else { return .null }
        return .number((duration.inMilliseconds * 1_000).rounded() / 1_000)
    }
}
