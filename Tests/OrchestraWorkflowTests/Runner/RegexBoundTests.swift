import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// A workflow's regular expressions run on server text within a time bound and the run's
/// cancellation (``BoundedRegex``). `(a+)+$` on forty `a`s and a `b` backtracks about 2^40
/// times: no machine finishes it within the bounds below, so a test that expects it to give
/// up cannot flake.
@Suite("WorkflowRunner: regular expressions are bounded", .timeLimit(.minutes(1)), .takesTurns)
struct RegexBoundTests {
    static let catastrophic = String(repeating: "a", count: 40) + "b"

    /// A step whose `regex:` capture or `matches:` check is `(a+)+$`, on a body of `a`s then `b`.
    static func workflow(check: Bool, timeout: String = "30s") throws -> Workflow {
        let use =
            check
            ? #"assert: [ { body: { matches: "(a+)+$" } } ]"#
            : #"captures: { x: { regex: "(a+)+$" } }"#
        return try parse(
            """
            steps:
              - { id: page, url: "http://x.test/page", timeout: \(timeout), \(use) }
            """)
    }

    static let server = ScriptedHTTPTransport { _, _ in
        (HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain"]), Data(catastrophic.utf8))
    }

    @Test(
        "a catastrophic expression gives up at the runner's bound, or the step's timeout if shorter",
        arguments: [
            (false, Duration.milliseconds(50), "30s", "capture 'x': regex '(a+)+$' gave up after 50 ms"),
            (false, .seconds(3_600), "40ms", "capture 'x': regex '(a+)+$' gave up after 40 ms"),
            (true, .milliseconds(50), "30s", "1 of 1 assertions failed: body matches \"(a+)+$\""),
        ])
    func givesUp(check: Bool, limit: Duration, timeout: String, message: String) async throws {
        let workflow = try Self.workflow(check: check, timeout: timeout)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: Self.server, regexTimeLimit: limit)
                .run(clock: ManualClock())
        }
        let page = try #require(report["page"])
        #expect(page.state == .failed)
        #expect(page.error?.hasPrefix(message) == true, "\(page.error ?? "")")
        if check {
            #expect(page.assertions.map(\.reason) == ["regex '(a+)+$' gave up after 50 ms"])
        }
    }

    /// Cancelling the run (Ctrl-C) stops an expression at work, with no bound to wait for: the
    /// run is cancelled from the expression's own progress report, so it is at work then.
    @Test(arguments: [false, true])
    func cancellingTheRunStopsAnExpressionAtWork(check: Bool) async throws {
        let workflow = try Self.workflow(check: check)
        let runTask = Locked<Task<WorkflowReport, Never>?>(nil)
        let progressReports = Locked(0)
        try await withHangGuard(.seconds(30)) {
            let run = Task {
                await BoundedRegex.$onProgress.withValue({
                    progressReports.withLock { $0 += 1 }
                    runTask.withLock { $0?.cancel() }
                }) {
                    // A bound no test run reaches: only the cancellation can stop it.
                    await WorkflowRunner(workflow: workflow, transport: Self.server, regexTimeLimit: .seconds(3_600))
                        .run(clock: ManualClock())
                }
            }
            runTask.withLock { $0 = run }
            let report = await run.value
            #expect(report["page"]?.state == .cancelled, "\(report["page"]?.error ?? "")")
        }
        #expect(progressReports.withLock { $0 } >= 1, "the expression was at work when the run was cancelled")
    }

    /// Sixteen elements, each with an expression that never ends: at most all but one of the
    /// pool's threads work on them, so a task of the pool (as the one that handles Ctrl-C)
    /// still runs and cancels the run, which stops them all. When every thread was in a match,
    /// nothing could cancel them before one gave up.
    @Test(.enabled(if: ProcessInfo.processInfo.activeProcessorCount >= 2, "needs a thread beside the match"))
    func aTaskOfThePoolCancelsARunWhoseElementsAllBacktrack() async throws {
        let workflow = try parse(
            """
            limit: 16
            steps:
              - { id: list, url: "http://x.test/list", captures: { items: $ } }
              - id: each
                for_each: "{{list.items}}"
                url: "http://x.test/page"
                captures: { x: { regex: "(a+)+$" } }
            """)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/list" {
                return respond(200, "[" + Array(repeating: "0", count: 16).joined(separator: ",") + "]")
            }
            return (HTTPResponse(status: .ok), Data(Self.catastrophic.utf8))
        }
        let progressReports = Locked(0)
        try await withHangGuard(.seconds(30)) {
            let run = Task {
                await BoundedRegex.$onProgress.withValue({ progressReports.withLock { $0 += 1 } }) {
                    await WorkflowRunner(workflow: workflow, transport: transport, regexTimeLimit: .seconds(3_600))
                        .run(clock: ManualClock())
                }
            }
            try await waitUntil("an expression at work") { progressReports.withLock { $0 } > 0 }
            run.cancel()
            let report = await run.value
            #expect(report["each"]?.state == .cancelled)
        }
    }

    @Test(
        "an expression that ends in time captures as before",
        arguments: [
            ("id=(\\d+)", "<a id=42>", "42"),
            ("<a [^>]+>", "x <a id=42> y", "<a id=42>"),
            ("é(.)", "café!", "!"),
        ])
    func anExpressionThatEndsInTimeCaptures(pattern: String, body: String, value: String) async throws {
        let escaped = pattern.replacingOccurrences(of: "\\", with: "\\\\")
        let workflow = try parse(
            """
            steps:
              - { id: page, url: "http://x.test/page", captures: { x: { regex: "\(escaped)" } } }
            """)
        let transport = ScriptedHTTPTransport { _, _ in (HTTPResponse(status: .ok), Data(body.utf8)) }
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["page"]?.captures == [JSONValue.Member("x", .string(value))], "\(report["page"]?.error ?? "")")
    }
}
