import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// Ctrl-C (SIGINT) and SIGTERM sent to a real `orchestra` process, started with every signal at
/// its default disposition (see ``ChildProcess``), as a terminal's shell starts it.
@Suite("orchestra run / demo: SIGINT and SIGTERM", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct SignalTests {
    /// A workflow whose second step never gets an answer: the demo server holds `/hang` until
    /// it stops.
    static let hangingWorkflow = """
        vars: { base: "http://127.0.0.1" }
        steps:
          - { id: album, url: "{{vars.base}}/album" }
          - { id: hang, url: "{{vars.base}}/hang", needs: album, timeout: 1h }
          - { id: after, url: "{{vars.base}}/album", needs: hang }
        """

    /// A real-time guard for what a child process does (far longer than a correct run; not a
    /// timing assertion).
    static let guardLimit = Duration.seconds(60)

    /// Starts `orchestra run` on `workflow` against `server` and returns once the server holds
    /// its `/hang` request: the run is in flight.
    static func startHanging(
        _ workflow: String, server: DemoServer, options: [String], readsOutput: Bool = true
    ) async throws -> RunningOrchestra {
        let file = try WorkflowCommandTests.workflowFile(workflow)
        let running = try OrchestraExecutable.start(
            ["run", file, "--var", "base=\(server.baseURL.absoluteString)"] + options, readsOutput: readsOutput
        )
        do {
            try await withHangGuard(guardLimit) { try await server.arrival(of: "/hang") }
        } catch {
            running.child.send(SIGKILL)
            Issue.record("the run's /hang request never reached the server: \(await running.finish())")
            throw error
        }
        return running
    }

    @Test(
        "the first SIGINT or SIGTERM cancels the run, which still prints its JSON report and writes its trace, then exits 130 or 143",
        arguments: [(SIGINT, "SIGINT", Int32(130)), (SIGTERM, "SIGTERM", 143)]
    )
    func signalCancelsAndReports(signal: Int32, name: String, status: Int32) async throws {
        let traces = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-signal-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: traces) }
        try await withDemoServer { server in
            let running = try await Self.startHanging(
                Self.hangingWorkflow, server: server, options: ["--output", "json", "--trace", traces.path]
            )
            running.child.send(signal)
            let output = await running.finish(limit: Self.guardLimit)

            #expect(output.status == status, "\(output)")
            #expect(output.stderr.contains("orchestra run: \(name): cancelling the run"), "\(output)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output)")
            let steps = try #require(document["steps"] as? [[String: Any]])
            let states = Dictionary(
                uniqueKeysWithValues: steps.map { ($0["id"] as? String ?? "", $0["state"] as? String ?? "") })
            #expect(states == ["album": "succeeded", "hang": "cancelled", "after": "cancelled"], "\(output)")
            let summary = try #require(document["summary"] as? [String: Any])
            #expect(summary["cancelled"] as? Int == 2 && summary["ok"] as? Bool == false, "\(output)")

            let trace = try ChromeTrace(contentsOf: traces.appendingPathComponent("flow.trace.json"))
            #expect(
                trace.completeEvents.contains { $0.name.hasPrefix("GET \(server.baseURL.absoluteString)/album") },
                "\(trace.completeEvents)")
            let html = try String(contentsOf: traces.appendingPathComponent("flow.html"), encoding: .utf8)
            #expect(html.hasPrefix("<!DOCTYPE html>"))
        }
    }

    @Test("after SIGINT, text output lists the cancelled steps and a summary")
    func interruptedTextOutput() async throws {
        try await withDemoServer { server in
            let running = try await Self.startHanging(Self.hangingWorkflow, server: server, options: [])
            running.child.send(SIGINT)
            let output = await running.finish(limit: Self.guardLimit)

            #expect(output.status == 130, "\(output)")
            let lines = output.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("✓ album") }, "\(output)")
            #expect(lines.contains { $0.hasPrefix("○ hang") && $0.contains("cancelled") }, "\(output)")
            #expect(lines.contains { $0.hasPrefix("○ after") }, "a line for the step that never started: \(output)")
            #expect(lines.last?.hasPrefix("3 steps: 1 succeeded, 2 cancelled") == true, "\(output)")
        }
    }

    @Test(
        "on a terminal, Ctrl-C clears the progress bar (and the echoed ^C) before the cancelled step and the summary",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: WorkflowCommandTests.script.path),
            "needs util-linux script for a terminal")
    )
    func ctrlCOnATerminal() async throws {
        try await withDemoServer { server in
            // Element N answers after N × 10 s: element 0 at once (the bar shows 1/8), the
            // others long after the Ctrl-C.
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "http://127.0.0.1" }
                steps:
                  - { id: album, url: "{{vars.base}}/album", captures: { images: $.images } }
                  - id: image
                    for_each: "{{album.images}}"
                    url: "{{vars.base}}/payload/1?latency_ms={{item.index}}0000"
                """)
            let running = try OrchestraExecutable.start(
                WorkflowCommandTests.onATerminal(["run", file, "--var", "base=\(server.baseURL.absoluteString)"]),
                executable: WorkflowCommandTests.script, writesInput: true
            )
            let drawn = await running.child.standardOutput.wait(for: "] 1/8", limit: Self.guardLimit)
            #expect(drawn, "the progress bar was drawn")
            running.child.write("\u{03}")  // Ctrl-C, typed on the terminal: SIGINT from its line discipline
            let output = await running.finish(limit: Self.guardLimit)

            #expect(output.status == 130, "\(output)")
            let screen = output.stdout
            let bar = try #require(screen.range(of: "] 1/8", options: .backwards), "\(output)")
            let cleared = try #require(
                screen.range(of: "\r\u{1B}[K", range: bar.upperBound..<screen.endIndex),
                "the line is cleared: \(output)")
            let after = screen[cleared.upperBound...]
            #expect(!after.contains("█") && !after.contains("░"), "no bar after the Ctrl-C: \(output)")
            #expect(after.contains("SIGINT: cancelling the run"), "\(output)")
            #expect(after.contains("○ image"), "\(output)")
            #expect(after.contains("2 steps: 1 succeeded, 1 cancelled"), "\(output)")
        }
    }

    @Test("a second SIGINT exits at once, without waiting for the report")
    func secondInterruptExitsAtOnce() async throws {
        // Enough steps that the JSON document (about 300 KB) is far more than a pipe holds.
        // Standard output is not read until the end, so once cancelled the command blocks
        // writing its report, for good: only the second signal can end it.
        let padding = String(repeating: "x", count: 1_200)
        let waiting = (0..<200).map { "  - { id: s\($0), url: \"{{vars.base}}/album?pad=\(padding)\", needs: hang }" }
        let workflow = Self.hangingWorkflow + "\n" + waiting.joined(separator: "\n") + "\n"
        try await withDemoServer { server in
            let running = try await Self.startHanging(
                workflow, server: server, options: ["--output", "json"], readsOutput: false)
            running.child.send(SIGINT)
            let acknowledged = await running.child.standardError.wait(
                for: "SIGINT: cancelling the run", limit: Self.guardLimit)
            #expect(acknowledged, "the first SIGINT was acknowledged")
            running.child.send(SIGINT)
            let output = await running.finish(limit: Self.guardLimit)

            #expect(
                output.status == 130,
                "exited (not killed by the signal) with SIGINT's status: \(output.status)\n\(output.stderr)")
            #expect(
                output.stderr.contains("orchestra run: SIGINT again: exiting now, without a report"), "\(output.stderr)"
            )
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) == nil,
                "the report was cut short, not completed (\(output.stdout.utf8.count) bytes)"
            )
        }
    }

    @Test("orchestra demo --serve stops on SIGTERM and exits 143")
    func demoServerStopsOnSigterm() async throws {
        let running = try OrchestraExecutable.start(["demo", "--serve"])
        let listening = await running.child.standardOutput.wait(for: "listening on", limit: Self.guardLimit)
        #expect(listening, "the server started")
        running.child.send(SIGTERM)
        let output = await running.finish(limit: Self.guardLimit)
        #expect(output.status == 143, "\(output)")
        #expect(output.stderr.contains("orchestra demo: SIGTERM: the server stopped"), "\(output)")
    }

    @Test("SIGINT during orchestra demo cancels it, says so and exits 130")
    func demoCancelsOnSigint() async throws {
        // Real latencies (speed 1): the scenario is still under way when the signal arrives.
        let running = try OrchestraExecutable.start(["demo", "--scenario", "serial"])
        let started = await running.child.standardOutput.wait(for: "serial", limit: Self.guardLimit)
        #expect(started, "the scenario started")
        running.child.send(SIGINT)
        let output = await running.finish(limit: Self.guardLimit)
        #expect(output.status == 130, "\(output)")
        #expect(output.stderr.contains("orchestra demo: SIGINT: the demo was cancelled"), "\(output)")
        #expect(!output.stdout.contains("Played"), "\(output)")
    }
}
