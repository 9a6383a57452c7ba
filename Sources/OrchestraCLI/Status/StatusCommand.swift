import ArgumentParser
import Foundation
import OrchestraWorkflow

/// `orchestra status --state FILE`: where a resumable run stands.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where a resumable run stands, from its --state file.",
        discussion: """
            For each step of the workflow, in file order: how many of its requests succeeded, \
            failed, may have been sent (in flight when a run stopped, not safe to send twice) \
            and are still to be sent. The file is only read: a run may be using it.

            Exit status: 0 every request succeeded, 1 some are still to be sent or did not \
            succeed, 2 the file cannot be read as a state file.
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: ArgumentHelp("The state file of 'orchestra run --state'.", valueName: "file"))
    var state: String

    @Option(help: ArgumentHelp("text (a table) or json (one document on stdout).", valueName: "format"))
    var output: Output = .text

    @Flag(name: .long, help: "Turn colours off (as NO_COLOR does).")
    var noColor = false

    func run() throws {
        let summary: WorkflowStateSummary
        do throws(WorkflowStateError) {
            summary = try WorkflowStateSummary.read(path: state)
        } catch {
            Console.standardError.line("orchestra status: error: --state: \(TerminalText.safe(error.description))")
            throw ExitCode(2)
        }
        let console = Console.standardOutput(noColor: noColor)
        switch output {
        case .text: console.write(Self.text(of: summary, path: state, console: console))
        case .json: console.write(Self.json(of: summary, path: state).prettyText + "\n")
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
        let header = ["step", "succeeded", "failed", "may have been sent", "pending"]
        var rows = summary.steps.map { step -> [String] in
            let pending: String
            if let count = step.pending {
                pending = step.forEach ? "\(count) of \(step.total ?? 0)" : "\(count)"
            } else {
                pending = "list not read yet"
            }
            return [
                TerminalText.quoted(step.id), "\(step.succeeded)", "\(step.failed)", "\(step.maybeSent)", pending,
            ]
        }
        rows.insert(header, at: 0)
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for (index, row) in rows.enumerated() {
            let cells = row.enumerated().map { column, cell in
                column == 0 ? Format.left(cell, widths[column]) : Format.right(cell, widths[column])
            }
            var line = cells.joined(separator: "  ")
            if index == 0 {
                line = console.paint(line, .dim)
            } else {
                let step = summary.steps[index - 1]
                let mark =
                    step.isDone
                    ? console.paint("✓", .green)
                    : step.failed + step.maybeSent > 0 ? console.paint("✗", .red) : console.paint("…", .yellow)
                line = "\(mark) \(line)"
            }
            lines.append(index == 0 ? "  \(line)" : line)
        }
        let done = summary.steps.count(where: \.isDone)
        lines.append(
            console.paint(
                "\(done) of \(Format.count(summary.steps.count, "step")) done",
                summary.isComplete ? .green : .yellow))
        return lines.map { $0 + "\n" }.joined()
    }

    /// `{"workflow", "file", "digest", "state", "runs", "created", "updated", "complete", "steps": […]}`.
    static func json(of summary: WorkflowStateSummary, path: String) -> JSONValue {
        .object([
            "workflow": summary.name.map(JSONValue.string) ?? .null,
            "file": .string(summary.file),
            "digest": .string(summary.digest),
            "state": .string(path),
            "runs": .integer(summary.runs),
            "created": .string(timestamp(summary.created)),
            "updated": .string(timestamp(summary.updated)),
            "complete": .bool(summary.isComplete),
            "steps": .array(
                summary.steps.map { step in
                    .object([
                        "id": .string(step.id),
                        "for_each": .bool(step.forEach),
                        "total": step.forEach ? step.total.map(JSONValue.integer) ?? .null : .integer(1),
                        "succeeded": .integer(step.succeeded),
                        "failed": .integer(step.failed),
                        "may_have_been_sent": .integer(step.maybeSent),
                        "pending": step.pending.map(JSONValue.integer) ?? .null,
                        "done": .bool(step.isDone),
                    ])
                }),
        ])
    }

    /// `2026-11-26T04:10:00Z`
    private static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
