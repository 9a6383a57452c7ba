import Foundation
import OrchestraDemoServer
import OrchestraHTTP

/// Plays one scenario: its header, the live progress while it runs, then its timeline, the
/// facts measured (by the server where it can count them) and, with `--trace`, its trace files.
struct ScenarioPlayer: Sendable {
    let console: Console
    let server: DemoServer
    let transport: any HTTPTransport
    let speed: Double
    /// `--url`s for the scenarios that download images; empty for the demo server's.
    let customURLs: [URL]
    /// `--trace DIR`.
    let traceDirectory: URL?

    /// What the demo learned from one scenario.
    struct Result: Sendable {
        let name: String
        let facts: [Fact]
        let wallTime: Duration

        /// The facts that did not hold: a bug in Orchestra (or a server that misbehaved).
        var broken: [Fact] { facts.filter { $0.holds == false } }
    }

    func play(_ scenario: Scenario, number: Int, of count: Int) async throws -> Result {
        let usesCustomURLs = scenario.usesImages && !customURLs.isEmpty
        let images = usesCustomURLs ? DemoImage.custom(customURLs) : DemoImage.served(by: server, speed: speed)
        console.write(header(scenario, number: number, of: count, images: usesCustomURLs ? images : nil))

        let recorder = Recorder(lanes: scenario.lanes(images))
        let stage = Stage(
            recorder: recorder, server: server, images: images, usesCustomURLs: usesCustomURLs, transport: transport,
            speed: speed)
        let display = LiveDisplay(console: console, recorder: recorder)
        server.resetPeak()

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
        let facts = concurrencyFacts(report, scenario: scenario, usesCustomURLs: usesCustomURLs) + stage.recordedFacts
        console.write(render(facts, report: report))
        if let traceDirectory {
            let files = try TraceExport(
                title: "Orchestra demo \(number) · \(scenario.name) — \(scenario.title)", spans: report.traceSpans
            )
            .write(to: traceDirectory, baseName: Self.traceBaseName(of: scenario, number: number))
            console.line("  " + console.paint("trace: " + files.map(\.path).joined(separator: ", "), .dim))
        }
        return Result(name: scenario.name, facts: facts, wallTime: report.wallTime)
    }

    /// The name of a scenario's trace files: `01-out-of-order`.
    static func traceBaseName(of scenario: Scenario, number: Int) -> String {
        String(format: "%02d-%@", number, scenario.name)
    }

    /// The most requests in flight at once, counted by the server (or, for `--url`s, by the
    /// demo itself), against the scenario's limit.
    private func concurrencyFacts(_ report: RecorderReport, scenario: Scenario, usesCustomURLs: Bool) -> [Fact] {
        if usesCustomURLs {
            return [
                Fact(
                    name: "max concurrency (counted by the client)",
                    value: "\(report.maxConcurrency) ≤ limit \(scenario.limit)",
                    holds: report.maxConcurrency <= scenario.limit)
            ]
        }
        let peak = server.peakInFlight
        return [
            Fact(
                name: "max concurrency seen by the server", value: "\(peak) ≤ limit \(scenario.limit)",
                holds: peak <= scenario.limit)
        ]
    }

    /// `  facts   max concurrency seen by the server  2 ≤ limit 2  ✓`
    private func render(_ facts: [Fact], report: RecorderReport) -> String {
        let width = facts.map(\.name.count).max() ?? 0
        var lines = facts.enumerated().map { offset, fact in
            let mark = fact.holds.map { $0 ? console.paint("✓", .green) : console.paint("✗ did not hold", .red) } ?? ""
            let line =
                (offset == 0 ? "  facts   " : "          ") + Format.left(fact.name, width) + "  "
                + console.paint(fact.value, .bold)
            return mark.isEmpty ? line : line + "  " + mark
        }
        lines.append(
            "          " + Format.left("wall time", width) + "  "
                + console.paint(Format.wallTime(report.wallTime), .bold)
                + " · \(report.succeeded)/\(report.downloads) succeeded")
        return lines.joined(separator: "\n") + "\n"
    }

    private func header(_ scenario: Scenario, number: Int, of count: Int, images: [DemoImage]?) -> String {
        let title = " \(number)/\(count) · \(scenario.name) "
        let rule = "━━" + title + String(repeating: "━", count: max(4, 76 - title.count))
        let orchestra = scenario.orchestra.split(separator: "\n").enumerated().map { offset, line in
            (offset == 0 ? "  orchestra  " : "             ") + console.paint(String(line), .cyan)
        }
        var lines =
            [
                "",
                console.paint(rule, .bold),
                "  " + console.paint(scenario.title, .bold),
                "  replaces   " + console.paint(scenario.replaces, .magenta),
            ] + orchestra
        if let images {
            lines.append(
                "  urls       "
                    + images.map { "\($0.name) = \($0.url.absoluteString)" }.joined(separator: "\n             "))
        }
        return (lines + [""]).joined(separator: "\n") + "\n"
    }
}

extension RecorderReport {
    /// One span per job that ran: from its first segment to its end, on its own lane, so no
    /// two spans of a lane overlap.
    var traceSpans: [TraceSpan] {
        lanes.compactMap { lane in
            guard let start = lane.segments.first?.start else { return nil }
            let end = lane.finishedAt ?? lane.segments.last?.end ?? wallTime
            let waited = lane.segments.filter { $0.kind == .waiting }.reduce(Duration.zero) {
                $0 + (($1.end ?? end) - $1.start)
            }
            let attempts = lane.segments.count { $0.kind != .waiting }
            var args: [(key: String, value: String)] = [
                ("outcome", lane.outcome.map { $0.succeeded ? "succeeded" : "failed" } ?? "unfinished"),
                ("attempts", "\(attempts)"),
                ("waited", Format.milliseconds(waited)),
            ]
            if let detail = lane.outcome?.detail { args.append(("detail", detail)) }
            let waits = lane.segments.filter { $0.kind == .waiting }.map { (start: $0.start, end: $0.end ?? end) }
            return TraceSpan(
                lane: lane.spec.name, name: lane.spec.name, start: start, end: end,
                category: lane.spec.isDownload ? "request" : "helper", args: args, waits: waits
            )
        }
    }
}
