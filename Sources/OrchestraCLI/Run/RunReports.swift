import Foundation
import OrchestraWorkflow

/// `--report-junit` and `--report-html`: a finished run as files for CI and for people.
///
/// A run is one or more suites: the run itself, or one per row of a `--data` run. Reports
/// are made from the run's reports, which are already redacted (`secrets:`).
struct RunReports {
    /// One run of the steps: a test suite.
    struct Suite {
        /// `row 3` for a row of a `--data` run; `nil` for a plain run.
        var name: String?
        var report: WorkflowReport
        /// When it started, from the start of the whole run.
        var offset: Duration = .zero

        /// Whether none of its steps started: a row of a `--data` run that a Ctrl-C kept
        /// from starting (its steps are cancelled, never run).
        var neverStarted: Bool {
            !report.steps.isEmpty && report.steps.allSatisfy { $0.state == .cancelled && $0.started == nil }
        }
    }

    var title: String
    /// The workflow file, as given.
    var file: String
    var suites: [Suite]

    // MARK: - JUnit

    /// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub actions that publish test
    /// results): a `testsuite` per suite, a `testcase` per step and per `for_each` element,
    /// with a `failure` (its message, and each failed assertion in the body) for one that
    /// failed and `skipped` for one that was skipped or cancelled; times in seconds.
    func junitXML(duration: Duration) -> String {
        var cases: [[(StepReport, String)]] = []
        for suite in suites {
            var list: [(StepReport, String)] = []
            for step in suite.report.steps {
                list.append((step, step.id))
                for item in step.items ?? [] { list.append((item, item.id)) }
            }
            cases.append(list)
        }
        let all = cases.flatMap { $0 }
        let failures = all.count { $0.0.state == .failed }
        let skipped = all.count { $0.0.state == .skipped || $0.0.state == .cancelled }
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml +=
            "<testsuites name=\"\(Self.xml(title))\" tests=\"\(all.count)\" failures=\"\(failures)\" errors=\"0\" skipped=\"\(skipped)\" time=\"\(Self.seconds(duration))\">\n"
        for (suite, list) in zip(suites, cases) {
            let name = suite.name.map { "\(title) · \($0)" } ?? title
            xml +=
                "  <testsuite name=\"\(Self.xml(name))\" tests=\"\(list.count)\" failures=\"\(list.count { $0.0.state == .failed })\" errors=\"0\" skipped=\"\(list.count { $0.0.state == .skipped || $0.0.state == .cancelled })\" time=\"\(Self.seconds(suite.report.duration))\" file=\"\(Self.xml(file))\">\n"
            for (step, id) in list {
                let time = Self.seconds(step.duration ?? .zero)
                let attributes = "classname=\"\(Self.xml(name))\" name=\"\(Self.xml(id))\" time=\"\(time)\""
                if step.state == .succeeded {
                    xml += "    <testcase \(attributes)/>\n"
                    continue
                }
                xml += "    <testcase \(attributes)>\n"
                let message = step.error ?? step.state.rawValue
                switch step.state {
                case .failed:
                    let failed = step.assertions.filter { !$0.passed }
                    let type = failed.isEmpty ? "StepFailure" : "AssertionFailure"
                    var details = "\(step.method) \(step.url)"
                    if let status = step.status { details += " → \(status)" }
                    details += "\n" + (failed.isEmpty ? message : failed.map(\.description).joined(separator: "\n"))
                    xml +=
                        "      <failure message=\"\(Self.xml(message))\" type=\"\(type)\">\(Self.xml(details))</failure>\n"
                default:
                    xml += "      <skipped message=\"\(Self.xml(message))\"/>\n"
                }
                xml += "    </testcase>\n"
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }

    /// `text` as XML attribute or element text: `& < > " '` escaped, and the characters XML
    /// 1.0 cannot hold (control characters but tab and line breaks, lone surrogates) replaced
    /// by U+FFFD.
    static func xml(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            default:
                let value = scalar.value
                let allowed = value >= 0x20 && value != 0xFFFE && value != 0xFFFF
                result.unicodeScalars.append(allowed ? scalar : "\u{FFFD}")
            }
        }
        return result
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f", duration / .seconds(1))
    }

    // MARK: - HTML

    /// One self-contained page: the totals, the timeline (a lane per step, per row of a
    /// `--data` run), and a table per suite with each step's request, response, attempts,
    /// assertions and failure. No script, no network.
    func html(duration: Duration) -> String {
        let steps = suites.flatMap(\.report.steps)
        let succeeded = suites.count { $0.report.allSucceeded }
        // A row never started (Ctrl-C first) is not run, not failed; one stopped is cancelled.
        let failed = suites.count { $0.report.count(.failed) > 0 }
        let notRun = suites.count(where: \.neverStarted)
        let cancelled = suites.count - succeeded - failed - notRun
        var rowCounts = "\(succeeded) succeeded"
        for (count, what) in [(failed, "failed"), (cancelled, "cancelled"), (notRun, "not run")] where count > 0 {
            rowCounts += ", \(count) \(what)"
        }
        let spans = suites.flatMap { suite in
            RunTrace.spans(of: suite.report, lane: suite.name.map { "\($0) · " } ?? "", offset: suite.offset)
        }
        let timeline = TraceExport(title: title, spans: spans)
        let outcome =
            suites.count > 1
            ? "\(Format.count(suites.count, "row")): \(rowCounts)"
            : "\(Format.count(steps.count, "step")): \(steps.count { $0.state == .succeeded }) succeeded, \(steps.count { $0.state != .succeeded }) did not"
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(e(title))</title>
            <style>
            \(TraceExport.style)
            table{border-collapse:collapse;margin:8px 0 20px;width:100%}td,th{border-bottom:1px solid #e5e5e5;padding:4px 8px;text-align:left;vertical-align:top}
            th{font-weight:600;color:#555}.ok{color:#2a7d3b}.fail{color:#c22}.skip{color:#a70}code{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
            ul{margin:2px 0;padding-left:16px}h2{font-size:15px;margin:18px 0 4px}
            </style></head><body>
            <h1>\(e(title))</h1>
            <div class="meta \(succeeded == suites.count ? "ok" : "fail")">\(e(outcome)) · \(Format.milliseconds(duration)) · \(e(file))</div>
            \(timeline.timeline())

            """
        for suite in suites {
            if let name = suite.name {
                page += "<h2 class=\"\(suite.report.allSucceeded ? "ok" : "fail")\">\(e(name))</h2>\n"
            }
            page +=
                "<table><tr><th></th><th>step</th><th>request</th><th>status</th><th>attempts</th><th>time</th><th>assertions and failure</th></tr>\n"
            for step in suite.report.steps {
                page += row(step)
                for item in step.items ?? [] where item.state != .succeeded || step.items!.count <= 50 {
                    page += row(item)
                }
            }
            page += "</table>\n"
        }
        return page + "</body></html>\n"
    }

    private func row(_ step: StepReport) -> String {
        let (mark, style) =
            switch step.state {
            case .succeeded: ("✓", "ok")
            case .failed: ("✗", "fail")
            case .skipped, .cancelled: ("–", "skip")
            }
        var notes = step.assertions.map { result in
            "<li class=\"\(result.passed ? "ok" : "fail")\">\(result.passed ? "✓" : "✗") <code>\(e(result.description))</code></li>"
        }
        if let error = step.error, step.state != .succeeded, step.assertions.allSatisfy(\.passed) {
            notes.append("<li class=\"\(style)\">\(e(error))</li>")
        }
        // A paginate step's `max_pages` or a stop by its reader; an `until:` poll's last attempts.
        if let note = step.note { notes.append("<li>\(e(note))</li>") }
        if step.pollCount > 0 { notes.append(pollNote(step)) }
        let status = step.status.map(String.init) ?? (step.items == nil ? "—" : "")
        let redirects = step.redirects.map { "<br>↪ \($0.status) → <code>\(e($0.location))</code>" }.joined()
        return
            "<tr><td class=\"\(style)\">\(mark)</td><td><code>\(e(step.id))</code></td><td><code>\(e(step.method)) \(e(step.url))</code>\(redirects)</td><td>\(status)</td><td>\(step.attempts)</td><td>\(step.duration.map(Format.milliseconds) ?? "")</td><td>\(notes.isEmpty ? "" : "<ul>\(notes.joined())</ul>")</td></tr>\n"
    }

    /// `4 polls` and the last attempts (at most ``shownPolls``), each with its status and why
    /// its checks did not hold.
    private func pollNote(_ step: StepReport) -> String {
        let shown = step.polls.suffix(Self.shownPolls)
        let earlier = step.pollCount - shown.count
        let attempts = shown.map { poll in
            let status = poll.status.map { "\($0)" } ?? "no response"
            let outcome = poll.failure.map { "not yet: \(e($0))" } ?? "passed"
            return "<li class=\"\(poll.passed ? "ok" : "skip")\">poll \(poll.number) · \(status) · \(outcome)</li>"
        }
        let heading = Format.count(step.pollCount, "poll") + (earlier > 0 ? " (the last \(shown.count))" : "")
        return "<li>\(heading)<ul>\(attempts.joined())</ul></li>"
    }

    /// The attempts of a poll a row lists: a `for_each` of polls has a row per element.
    static let shownPolls = 5

    private func e(_ text: String) -> String {
        TraceExport.escaped(text)
    }
}
