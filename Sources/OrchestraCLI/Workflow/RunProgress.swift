import Orchestra
import OrchestraWorkflow

/// What `orchestra run` shows while it runs, in text output.
///
/// A line per step as it ends (``RunPrinter/line(for:)``). On a terminal, while `for_each`
/// steps are under way, a status line under those lines, redrawn in place as their elements
/// end: `  image [████████░░░░░░░░] 4/8`. Elsewhere (a pipe, a file, CI) only the step lines:
/// no redraws, no escape codes.
final class RunProgress: Sendable {
    private let printer: RunPrinter
    private let state = Locked(State())

    private struct State {
        /// The `for_each` steps under way, in the order they started, with their progress.
        var steps: [(id: String, finished: Int, total: Int)] = []
        /// The width of the status line on screen, to erase it.
        var drawnWidth = 0
    }

    init(printer: RunPrinter) {
        self.printer = printer
    }

    private var console: Console { printer.console }

    /// Shows `event`. Calls come one at a time (``WorkflowRunner/run(clock:onEvent:)``).
    func handle(_ event: WorkflowEvent) {
        switch event {
        case .started:
            break
        case .progress(let step, let finished, let total):
            guard console.isTerminal else { return }
            state.withLock { state in
                if let index = state.steps.firstIndex(where: { $0.id == step }) {
                    state.steps[index] = (step, finished, total)
                } else {
                    state.steps.append((step, finished, total))
                }
                redraw(&state)
            }
        case .finished(let report):
            state.withLock { state in
                erase(&state)
                printer.line(for: report)
                state.steps.removeAll { $0.id == report.id }
                redraw(&state)
            }
        }
    }

    /// Erases the status line, if one is on screen.
    private func erase(_ state: inout State) {
        guard state.drawnWidth > 0 else { return }
        console.write("\r" + String(repeating: " ", count: state.drawnWidth) + "\r")
        state.drawnWidth = 0
    }

    /// Draws the status line again, without a newline, so the next write replaces it.
    private func redraw(_ state: inout State) {
        guard console.isTerminal, !state.steps.isEmpty else { return }
        var text = ""
        var width = 0
        for step in state.steps {
            let bar = ProgressBar(done: step.finished, total: step.total).render(console)
            text += "  " + step.id + " " + bar.text
            width += 2 + step.id.count + 1 + bar.width
        }
        let padding = max(0, state.drawnWidth - width)
        console.write("\r" + text + String(repeating: " ", count: padding))
        state.drawnWidth = width + padding
    }
}
