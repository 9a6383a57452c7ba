import Orchestra
import OrchestraWorkflow

/// What `orchestra run` shows while it runs, in text output.
///
/// A line per step as it ends (``RunPrinter/lines(for:)``). On a terminal, while `for_each`
/// steps are under way, a status line under those lines, redrawn in place as their elements
/// end: `  image [████████░░░░░░░░] 4/8`. Elsewhere (a pipe, a file, CI) only the step lines:
/// no redraws, no escape codes.
///
/// When the run is interrupted (Ctrl-C), the bar stops: the line it was on — with the `^C`
/// the terminal echoed — is cleared before anything else is written, and it is not drawn
/// again. ``finish(_:)`` then prints the steps that ended without a line (cancelled or
/// skipped when the run stopped).
final class RunProgress: Sendable {
    private let printer: RunPrinter
    private let state = Locked(State())

    private struct State {
        /// The `for_each` steps under way, in the order they started, with their progress.
        var steps: [(id: String, finished: Int, total: Int)] = []
        /// The width of the status line on screen, to erase it.
        var drawnWidth = 0
        /// The steps whose line was printed.
        var printed: Set<String> = []
        /// Set by ``interrupt()``: the line under the cursor must be cleared, and no bar drawn.
        var interrupted = false
        /// Whether the line was cleared since the interruption.
        var clearedAfterInterruption = false
    }

    /// Whether the bar is drawn on a terminal (not with `--verbose`, whose blocks it would cut).
    private let showsBar: Bool

    init(printer: RunPrinter, showsBar: Bool = true) {
        self.printer = printer
        self.showsBar = showsBar
    }

    private var console: Console { printer.console }

    /// Shows `event`. (The runner delivers events one at a time; the lock keeps the screen's
    /// state whole regardless, and nothing is written while it is held.)
    func handle(_ event: WorkflowEvent) {
        let output: String
        switch event {
        case .started:
            return
        case .progress(let step, let finished, let total, _):
            guard console.isTerminal, showsBar else { return }
            output = state.withLock { state in
                guard !state.interrupted else { return clearAfterInterruption(&state) }
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
                let erased = state.interrupted ? clearAfterInterruption(&state) : erase(&state)
                state.steps.removeAll { $0.id == report.id }
                state.printed.insert(report.id)
                return erased + lines + redraw(&state)
            }
        }
        if !output.isEmpty { console.write(output) }
    }

    /// The run was interrupted: from the next write on, the bar is cleared and not drawn again.
    /// (Writes nothing itself: it may be called while an event is being shown.)
    func interrupt() {
        state.withLock { $0.interrupted = true }
    }

    /// After the run: clears the bar (or, after an interruption, the line the terminal echoed
    /// `^C` on) and prints a line for each step of `report` that has none yet, in file order.
    func finish(_ report: WorkflowReport) {
        let (cleared, unprinted) = state.withLock { state in
            let cleared = state.interrupted ? clearAfterInterruption(&state) : erase(&state)
            state.steps.removeAll()
            let unprinted = report.steps.filter { !state.printed.contains($0.id) }
            state.printed.formUnion(unprinted.map(\.id))
            return (cleared, unprinted)
        }
        let output = cleared + unprinted.map(printer.lines(for:)).joined()
        if !output.isEmpty { console.write(output) }
    }

    /// Once after an interruption, on a terminal: back to the start of the line and clear it
    /// all, the bar and whatever the terminal echoed after it.
    private func clearAfterInterruption(_ state: inout State) -> String {
        state.steps.removeAll()
        state.drawnWidth = 0
        guard console.isTerminal, !state.clearedAfterInterruption else { return "" }
        state.clearedAfterInterruption = true
        return Console.clearLine
    }

    /// What erases the status line, if one is on screen.
    private func erase(_ state: inout State) -> String {
        guard state.drawnWidth > 0 else { return "" }
        defer { state.drawnWidth = 0 }
        return "\r" + String(repeating: " ", count: state.drawnWidth) + "\r"
    }

    /// The status line drawn again, without a newline, so the next write replaces it.
    private func redraw(_ state: inout State) -> String {
        guard !state.steps.isEmpty, !state.interrupted else { return "" }  // only ever filled on a terminal
        var text = ""
        var width = 0
        for step in state.steps {
            let bar = ProgressBar(done: step.finished, total: step.total).render(console)
            let id = RunPrinter.shown(step.id)
            text += "  " + id + " " + bar.text
            width += 2 + id.count + 1 + bar.width
        }
        let padding = max(0, state.drawnWidth - width)
        state.drawnWidth = width + padding
        return "\r" + text + String(repeating: " ", count: padding)
    }
}
