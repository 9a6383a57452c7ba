/// Plays one scenario: its header, the live progress while it runs, then its timeline and a
/// summary line.
struct ScenarioPlayer: Sendable {
    let console: Console
    let speed: Double

    /// What the demo learned from one scenario.
    struct Result: Sendable {
        let name: String
        let maxConcurrency: Int
        let limit: Int
        let wallTime: Duration

        /// Whether more downloads ran at once than the scenario allows: a bug in Orchestra.
        var exceededLimit: Bool { maxConcurrency > limit }
    }

    func play(_ scenario: Scenario, number: Int, of count: Int) async throws -> Result {
        console.write(header(scenario, number: number, of: count))
        let recorder = Recorder(lanes: scenario.lanes)
        let stage = Stage(recorder: recorder, speed: speed)
        let display = LiveDisplay(console: console, recorder: recorder)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await scenario.body(stage) }
            group.addTask { await display.run() }
            // The display runs until cancelled, so the first child to end is the scenario
            // (an error it throws propagates here, and leaving the group cancels the display).
            try await group.next()
            group.cancelAll()
        }

        let report = recorder.report()
        console.write("\n" + Timeline(report: report).render(console))
        console.line(summary(report, limit: scenario.limit))
        return Result(
            name: scenario.name,
            maxConcurrency: report.maxConcurrency,
            limit: scenario.limit,
            wallTime: report.wallTime
        )
    }

    private func header(_ scenario: Scenario, number: Int, of count: Int) -> String {
        let title = " \(number)/\(count) · \(scenario.name) "
        let rule = "━━" + title + String(repeating: "━", count: max(4, 76 - title.count))
        let orchestra = scenario.orchestra.split(separator: "\n").enumerated().map { offset, line in
            (offset == 0 ? "  orchestra  " : "             ") + console.paint(String(line), .cyan)
        }
        return ([
            "",
            console.paint(rule, .bold),
            "  " + console.paint(scenario.title, .bold),
            "  replaces   " + console.paint(scenario.replaces, .magenta),
        ] + orchestra + [""]).joined(separator: "\n") + "\n"
    }

    /// `  max concurrency 2 (limit 2) · wall time 1.9 s · 8/8 succeeded`
    private func summary(_ report: RecorderReport, limit: Int) -> String {
        var concurrency = "max concurrency \(report.maxConcurrency) (limit \(limit))"
        if report.maxConcurrency > limit {
            concurrency = console.paint(concurrency + " ⚠ above the limit", .red)
        } else {
            concurrency = console.paint(concurrency, .bold)
        }
        let succeeded = "\(report.succeeded)/\(report.downloads) succeeded"
        return "  " + concurrency
            + " · wall time " + console.paint(Format.wallTime(report.wallTime), .bold)
            + " · " + succeeded
    }
}
