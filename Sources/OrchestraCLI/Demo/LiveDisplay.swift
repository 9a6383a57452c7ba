/// Shows a scenario while it runs, from its recorder.
///
/// On a terminal: the log lines as they come, with a progress bar under them redrawn in place.
/// Elsewhere: the log lines and one plain progress line per finished download, no redraws and
/// no escape codes.
struct LiveDisplay: Sendable {
    let console: Console
    let recorder: Recorder
    var refreshInterval: Duration = .milliseconds(50)

    /// Draws until the task is cancelled, then draws the final state once.
    func run() async {
        var drawnWidth = 0
        repeat {
            drawnWidth = draw(final: false, erasing: drawnWidth)
            try? await Task.sleep(for: refreshInterval)  // returns at once when cancelled
        } while !Task.isCancelled
        _ = draw(final: true, erasing: drawnWidth)
    }

    /// Writes what is new; returns the width of the bar left on screen.
    private func draw(final: Bool, erasing drawnWidth: Int) -> Int {
        let entries = recorder.takeNewEntries()
        guard console.isTerminal else {
            let lines = entries.filter(isWorthALine).map { plainLine(for: $0) + "\n" }
            if !lines.isEmpty { console.write(lines.joined()) }
            return 0
        }
        var output = "\r" + String(repeating: " ", count: drawnWidth) + "\r"
        for entry in entries {
            guard case .note(let text, let tone) = entry.content else { continue }
            output += LogLine.render(time: entry.time, text: text, tone: tone, console: console) + "\n"
        }
        let (status, width) = statusLine(final: final)
        output += status + (final ? "\n" : "")
        console.write(output)
        return width
    }

    /// `  [████████░░░░░░░░] 4/8  running 2 · waiting 4 · 0.6 s`
    private func statusLine(final: Bool) -> (String, Int) {
        let progress = recorder.progress()
        let (bar, barWidth) = ProgressBar(done: progress.done, total: progress.total).render(console)
        let detail =
            final
            ? "done in \(Format.wallTime(progress.elapsed))"
            : "running \(progress.running) · waiting \(progress.waiting) · \(Format.wallTime(progress.elapsed))"
        return ("  " + bar + "  " + console.paint(detail, .dim), 2 + barWidth + 2 + detail.count)
    }

    /// Every note; a finished job only up to 16 jobs, beyond that each eighth of the way.
    private func isWorthALine(_ entry: LogEntry) -> Bool {
        guard case .finished(_, _, let done, let total) = entry.content, total > 16 else { return true }
        return done == total || done % max(1, total / 8) == 0
    }

    /// A log line, or for a finished download `   412 ms  [████░░░░] 4/8  img-2 ✓`.
    private func plainLine(for entry: LogEntry) -> String {
        switch entry.content {
        case .note(let text, let tone):
            return LogLine.render(time: entry.time, text: text, tone: tone, console: console)
        case .finished(let lane, let outcome, let done, let total):
            let bar = ProgressBar(done: done, total: total).render(console).text
            let text = "\(bar)  \(lane) \(OutcomeMark.render(outcome, console: console))"
            return LogLine.render(time: entry.time, text: text, tone: .plain, console: console)
        }
    }
}
