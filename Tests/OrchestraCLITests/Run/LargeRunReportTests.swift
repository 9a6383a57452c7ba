import Foundation
import OrchestraWorkflow
import TestSupport
import Testing

@testable import OrchestraCLI

/// Reports of large runs: a `for_each` step with tens of thousands of elements (a lane each in
/// the HTML timeline and the trace), and `--data` runs a Ctrl-C stopped.
@Suite("Run reports of large and cancelled runs", .timeLimit(.minutes(3)), .ownThread, .takesTurns)
struct LargeRunReportTests {
    /// A `for_each` step `each` whose `count` elements each ran 1 ms, one after the other.
    static func forEach(_ count: Int) -> WorkflowReport {
        var step = StepReport(id: "each", state: .succeeded, method: "GET", url: "http://x.test/{{index}}")
        step.items = (0..<count).map { index in
            StepReport(
                id: "each[\(index)]", state: index == 7 ? .failed : .succeeded, method: "GET",
                url: "http://x.test/\(index)", status: index == 7 ? 500 : 200, attempts: 1,
                started: .milliseconds(index), firstSent: .milliseconds(index), ended: .milliseconds(index + 1),
                error: index == 7 ? "expected 2xx, got 500" : nil)
        }
        return WorkflowReport(workflow: "w", steps: [step], duration: .milliseconds(count))
    }

    /// A row per lane, in the order lanes first appear, each with the bars of its own spans:
    /// one pass over the spans (filtering them per lane was quadratic: 40,000 elements took 28 s).
    @Test func theTimelineHasARowPerElementWithItsOwnBar() throws {
        let count = 20_000
        let spans = RunTrace.spans(of: Self.forEach(count))
        #expect(spans.count == count)
        let timeline = TraceExport(title: "w", spans: spans).timeline()
        let rows = timeline.split(separator: "\n").filter { $0.hasPrefix("<div class=\"row\">") }
        #expect(rows.count == count)
        for index in [0, 7, 12_345, count - 1] {
            let row = String(rows[index])
            #expect(row.contains("<div class=\"lane\">each[\(index)]</div>"), "\(row)")
            #expect(row.components(separatedBy: "class=\"bar").count == 2, "one bar: \(row)")
            #expect(row.contains("GET http://x.test/\(index)&#10;"), "\(row)")
        }
        #expect(rows[7].contains("<div class=\"note\">expected 2xx, got 500</div>"))
        #expect(rows[7].contains(" bad\""))
        #expect(!rows[8].contains(" bad\""))
    }

    @Test func spansOfOneLaneStayTogetherInOrderWhateverComesBetween() {
        let spans = [("a", 0), ("b", 1), ("a", 2), ("c", 3), ("b", 4)].map { lane, start in
            TraceSpan(
                lane: lane, name: "\(lane)\(start)", start: .milliseconds(start), end: .milliseconds(start + 1),
                category: "step")
        }
        let groups = TraceExport(title: "t", spans: spans).spansByLane()
        #expect(groups.map(\.lane) == ["a", "b", "c"])
        #expect(groups.map { $0.spans.map(\.name) } == [["a0", "a2"], ["b1", "b4"], ["c3"]])
    }

    @Test func theHTMLReportAndTheTraceOfALargeForEachAreComplete() throws {
        let count = 20_000
        let report = Self.forEach(count)
        let html = RunReports(title: "w", file: "w.yaml", suites: [.init(name: nil, report: report)])
            .html(duration: report.duration)
        #expect(html.components(separatedBy: "<div class=\"row\">").count == count + 1)
        // The table lists the step and, beyond 50 elements, only the elements that did not succeed.
        #expect(html.contains("<td><code>each[7]</code></td>"))
        #expect(!html.contains("<td><code>each[8]</code></td>"))
        let json = TraceExport(title: "w", spans: RunTrace.spans(of: report)).chromeJSON()
        #expect(json.components(separatedBy: "\"ph\":\"X\"").count == count + 1)
    }

    @Test func theHTMLReportShowsAPollsLastAttemptsAndAStepsNote() throws {
        var job = StepReport(id: "job", state: .succeeded, method: "GET", url: "http://x.test/job", status: 200)
        job.pollCount = 7
        job.polls = (1...7).map { number in
            PollAttempt(
                number: number, sent: .milliseconds(number * 100),
                status: number == 3 ? nil : (number == 7 ? 200 : 202),
                failure: number == 7 ? nil : "$.status == \"done\": got \"<running>\"")
        }
        var pages = StepReport(id: "pages", state: .succeeded, method: "GET", url: "http://x.test/pages")
        pages.note = "max_pages (5) reached; more pages were left"
        let report = WorkflowReport(workflow: "w", steps: [job, pages], duration: .seconds(1))
        let html = RunReports(title: "w", file: "w.yaml", suites: [.init(name: nil, report: report)])
            .html(duration: report.duration)
        let row = try #require(html.split(separator: "\n").first { $0.contains("<td><code>job</code></td>") })
        #expect(row.contains("<li>7 polls (the last 5)<ul>"), "\(row)")
        #expect(!row.contains("poll 2 ·"))
        let third = "poll 3 · no response · not yet: $.status == &quot;done&quot;: got &quot;&lt;running&gt;&quot;"
        #expect(row.contains(third), "\(row)")
        #expect(row.contains("<li class=\"ok\">poll 7 · 200 · passed</li>"), "\(row)")
        #expect(html.contains("<li>max_pages (5) reached; more pages were left</li>"))
    }

    // MARK: - --data runs stopped by Ctrl-C

    /// Ten rows: two succeeded, one failed, one cancelled in flight, six never started.
    static func stoppedDataRun() -> DataRunReport {
        func row(_ index: Int, _ states: [StepReport.State]?) -> DataRunReport.Row {
            let steps = (states ?? [.cancelled, .cancelled]).enumerated().map { offset, state in
                StepReport(
                    id: "s\(offset)", state: state, method: "GET", url: "http://x.test/",
                    started: states == nil ? nil : .zero,
                    error: states == nil ? "cancelled before this row started" : nil)
            }
            return DataRunReport.Row(
                index: index, data: [:], started: states == nil ? nil : .milliseconds(index),
                report: WorkflowReport(workflow: "w", steps: steps, duration: .milliseconds(1)))
        }
        let ran: [[StepReport.State]] = [
            [.succeeded, .succeeded], [.failed, .skipped], [.succeeded, .succeeded], [.succeeded, .cancelled],
        ]
        let rows = ran.enumerated().map { row($0.offset, $0.element) } + (4..<10).map { row($0, nil) }
        return DataRunReport(rows: rows, duration: .milliseconds(10), logins: 0, refreshes: 0)
    }

    @Test func aStoppedDataRunCountsRowsNeverStartedAsNotRun() throws {
        let report = Self.stoppedDataRun()
        let printer = RunPrinter(console: Console(isTerminal: false, usesColor: false), width: 2)
        let line = printer.summaryLine(of: report)
        #expect(line.hasPrefix("10 rows × 2 steps: 2 succeeded, 1 failed, 1 cancelled, 6 not run · "), "\(line)")

        let json = RunPrinter.json(of: report, workflow: "w", file: "w.yaml", dataFile: "d.csv")
        let summary = try #require(json["summary"])
        #expect(summary["rows"] == .integer(10))
        #expect(summary["succeeded"] == .integer(2))
        #expect(summary["failed"] == .integer(1))
        #expect(summary["cancelled"] == .integer(1))
        #expect(summary["not_run"] == .integer(6))

        let suites = report.rows.map { RunReports.Suite(name: "row \($0.index + 1)", report: $0.report) }
        let reports = RunReports(title: "w", file: "w.yaml", suites: suites)
        let junit = reports.junitXML(duration: report.duration)
        #expect(junit.contains(#"tests="20" failures="1" errors="0" skipped="14""#), "\(junit)")
        let html = reports.html(duration: report.duration)
        #expect(html.contains("10 rows: 2 succeeded, 1 failed, 1 cancelled, 6 not run"), "\(html.prefix(3_000))")
    }
}
