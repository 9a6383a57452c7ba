import Foundation
import OrchestraWorkflow

/// How `orchestra run` prints: a line per step as it ends, a summary, or one JSON document.
struct RunPrinter: Sendable {
    let console: Console
    /// The longest step id, to align the lines.
    let width: Int

    /// `✓ login  POST http://127.0.0.1:8080/login → 200 · 12 ms`
    func line(for step: StepReport) {
        let id = Format.left(step.id, width)
        let request = "\(step.method) \(step.url)"
        let duration = step.duration.map { " · " + Format.milliseconds($0) } ?? ""
        let attempts = step.attempts > 1 ? " · \(step.attempts) attempts" : ""
        switch step.state {
        case .succeeded:
            let status = step.status.map { " → \($0)" } ?? ""
            let captures = step.captures.isEmpty ? "" : console.paint(" · captured " + step.captures.map(\.key).joined(separator: ", "), .dim)
            console.line("\(console.paint("✓", .green)) \(id)  \(request)\(status)\(duration)\(attempts)\(captures)")
        case .failed:
            let status = step.status.map { " → \($0)" } ?? ""
            console.line("\(console.paint("✗", .red)) \(id)  \(request)\(status)\(duration)\(attempts)")
            console.line("  \(String(repeating: " ", count: width))  \(console.paint(step.error ?? "failed", .red))")
        case .skipped:
            console.line("\(console.paint("–", .yellow)) \(id)  \(console.paint(step.error ?? "skipped", .dim))")
        case .cancelled:
            console.line("\(console.paint("○", .yellow)) \(id)  \(console.paint(step.error ?? "cancelled", .dim))")
        }
    }

    /// `4 steps: 3 succeeded, 1 failed · 0.42 s`
    func summary(of report: WorkflowReport) {
        var parts = ["\(report.count(.succeeded)) succeeded"]
        for state in [StepReport.State.failed, .skipped, .cancelled] where report.count(state) > 0 {
            parts.append("\(report.count(state)) \(state.rawValue)")
        }
        var line = "\(Format.count(report.steps.count, "step")): \(parts.joined(separator: ", ")) · \(Format.wallTime(report.duration))"
        if report.logins + report.refreshes > 0 {
            line += " · auth: \(Format.count(report.logins, "login")), \(Format.count(report.refreshes, "refresh", plural: "refreshes"))"
        }
        console.line(console.paint(line, report.allSucceeded ? .green : .red))
    }

    /// The whole run as one JSON document: `{"workflow", "file", "steps": […], "summary": {…}}`.
    static func json(of report: WorkflowReport, file: String) -> JSONValue {
        let steps = report.steps.map { step -> JSONValue in
            .object([
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
            ])
        }
        return .object([
            "workflow": report.workflow.map(JSONValue.string) ?? .null,
            "file": .string(file),
            "steps": .array(steps),
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

    private static func milliseconds(_ duration: Duration?) -> JSONValue {
        guard let duration else { return .null }
        return .number((duration.inMilliseconds * 1_000).rounded() / 1_000)
    }
}

/// `--trace DIR`: one lane per step, one span per step that was sent, from its first send to
/// its end.
enum RunTrace {
    static func write(_ report: WorkflowReport, workflow: Workflow, file: String, to directory: String) throws -> [URL] {
        let spans = report.steps.compactMap { step -> TraceSpan? in
            guard let sent = step.firstSent, let ended = step.ended else { return nil }
            var args: [(key: String, value: String)] = [("method", step.method), ("url", step.url)]
            args.append(("status", step.status.map(String.init) ?? "none"))
            args.append(("attempts", "\(step.attempts)"))
            args.append(("outcome", step.state.rawValue))
            if let error = step.error { args.append(("error", error)) }
            return TraceSpan(lane: step.id, name: "\(step.method) \(step.url)", start: sent, end: ended, category: "step", args: args)
        }
        let base = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        let export = TraceExport(title: workflow.name ?? base, spans: spans)
        return try export.write(to: URL(fileURLWithPath: directory), baseName: base)
    }
}
