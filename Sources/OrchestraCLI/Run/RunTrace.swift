import Foundation
import OrchestraWorkflow

/// `--trace DIR`: one lane per step, one span per step that was sent, from its first send to
/// its end; a `for_each` step has a lane per element (`image[0]`, …) instead.
enum RunTrace {
    static func write(_ report: WorkflowReport, workflow: Workflow, file: String, to directory: String) throws -> [URL]
    {
        let base = baseName(of: file)
        let export = TraceExport(title: workflow.name ?? base, spans: spans(of: report) + rateSpans(of: report))
        return try export.write(to: URL(fileURLWithPath: directory), baseName: base)
    }

    /// A span per step that was sent (per element for a `for_each` step), on a lane named
    /// `lane` + its id, `offset` later than the report's times.
    static func spans(of report: WorkflowReport, lane: String = "", offset: Duration = .zero) -> [TraceSpan] {
        report.steps.flatMap { $0.items ?? [$0] }.compactMap { step -> TraceSpan? in
            guard let sent = step.firstSent, let ended = step.ended else { return nil }
            var args: [(key: String, value: String)] = [("method", step.method), ("url", step.url)]
            args.append(("status", step.status.map(String.init) ?? "none"))
            args.append(("attempts", "\(step.attempts)"))
            args.append(("outcome", step.state.rawValue))
            if let error = step.error { args.append(("error", error)) }
            return TraceSpan(
                lane: lane + step.id, name: "\(step.method) \(step.url)", start: offset + sent, end: offset + ended,
                category: "step", args: args
            )
        }
    }

    /// A span per pace change on a lane per host (`rate · https://api.test:443`): a pause for
    /// as long as it holds the host, a new rate as a moment.
    static func rateSpans(of report: WorkflowReport, offset: Duration = .zero) -> [TraceSpan] {
        report.rateEvents.map { record in
            let length: Duration =
                switch record.event.change {
                case .paused(let duration): duration
                case .rateChanged: .zero
                }
            return TraceSpan(
                lane: "rate · \(record.event.host)", name: record.event.description, start: offset + record.at,
                end: offset + record.at + length, category: "rate", args: [("reason", record.event.reason)])
        }
    }

    /// The trace files' name: the workflow file's, without its extension (`album`).
    static func baseName(of file: String) -> String {
        URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
    }
}
