import Orchestra
import OrchestraWorkflow

/// What `orchestra run` shows while it runs, in text output.
///
/// A line per step as it ends (``RunPrinter/lines(for:)``). On a terminal, while `for_each`
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

    /// Shows `event`. (The runner delivers events one at a time; the lock keeps the screen's
    /// state whole regardless, and nothing is written while it is held.)
    func handle(_ event: WorkflowEvent) {
        let output: String
        switch event {
        case .started:
            return
        case .progress(let step, let finished, let total):
            guard console.isTerminal else { return }
            output = state.withLock { state in
                if let index = state.steps.firstIndex(where: { $0.id == step }) {
                    state.steps[index] = (step, finished, total)
                } else {
                    state.steps.append((step, finished, total))
                }
                return redraw(&state)
            }
        case .finished(let report):
            let lines = printer.lines(for: report)
            output = state.withLock { state in
                let erased = erase(&state)
                state.steps.removeAll { $0.id == report.id }
                return erased + lines + redraw(&state)
            }
        }
        if !output.isEmpty { console.write(output) }
    }

    /// What erases the status line, if one is on screen.
    private func erase(_ state: inout State) -> String {
        guard state.drawnWidth > 0 else { return "" }
        defer { state.drawnWidth = 0 }
        return "\r" + String(repeating: " ", count: state.drawnWidth) + "\r"
    }

    /// The status line drawn again, without a newline, so the next write replaces it.
    private func redraw(_ state: inout State) -> String {
        guard !state.steps.isEmpty else { return "" }   // only ever filled on a terminal
        var text = ""
        var width = 0
        for step in state.steps {
            let bar = ProgressBar(done: step.finished, total: step.total).render(console)
            text += "  " + step.id + " " + bar.text
            width += 2 + step.id.count + 1 + bar.width
        }
        let padding = max(0, state.drawnWidth - width)
        state.drawnWidth = width + padding
        return "\r" + text + String(repeating: " ", count: padding)
    }
}
