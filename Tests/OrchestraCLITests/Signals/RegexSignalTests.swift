import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// Ctrl-C while a workflow's regular expressions backtrack without end on a server's text, and
/// while a long `for_each` is in flight.
@Suite(
    "orchestra run: Ctrl-C stops regular expressions and long for_each steps", .serialized, .timeLimit(.minutes(5)),
    .takesTurns)
struct RegexSignalTests {
    /// Every element's response (`/anything` echoes `x`: forty `a`s then `b`) makes `(a+)+$`
    /// backtrack about 2^40 times. Each gives up after the 3 s bound, so a run of 1,000 elements
    /// would last minutes: only the first SIGINT ends it in time.
    static func catastrophicWorkflow(_ use: String) -> String {
        """
        vars: { base: "http://127.0.0.1" }
        limit: 2
        steps:
          - { id: list, url: "{{vars.base}}/list/1000", captures: { items: $.items } }
          - id: each
            for_each: "{{list.items}}"
            url: "{{vars.base}}/anything?x=\(String(repeating: "a", count: 40))b&i={{index}}"
            \(use)
        """
    }

    @Test(
        "the first SIGINT stops captures and checks whose expression backtracks without end, and the run exits 130",
        arguments: [
            #"captures: { x: { regex: "(a+)+$" } }"#,
            #"assert: [ { body: { matches: "(a+)+$" } } ]"#,
        ])
    func firstInterruptStopsARegexAtWork(use: String) async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(Self.catastrophicWorkflow(use))
            let running = try OrchestraExecutable.start(
                ["run", file, "--var", "base=\(server.baseURL.absoluteString)"])
            do {
                try await withHangGuard(SignalTests.guardLimit) { try await server.arrival(of: "/anything") }
            } catch {
                running.child.send(SIGKILL)
                Issue.record("no element's request reached the server: \(await running.finish())")
                throw error
            }
            running.child.send(SIGINT)
            let output = await running.finish(limit: SignalTests.guardLimit)

            #expect(output.status == 130, "\(output)")
            #expect(output.stdout.contains("○ each"), "\(output)")
            #expect(output.stdout.contains("2 steps: 1 succeeded, 1 cancelled"), "\(output)")
        }
    }

    /// Ctrl-C during a 200,000-element `for_each` whose requests never answer: the step is
    /// cancelled and the run exits 130 (every element never started used to get a report of
    /// its own first: 5,000,000 took 26 s; the library's tests check what is listed).
    @Test("the first SIGINT during a 200,000-element for_each reports it cancelled and exits 130")
    func interruptDuringAHugeForEach() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "http://127.0.0.1" }
                steps:
                  - { id: list, url: "{{vars.base}}/list/200000", captures: { items: $.items } }
                  - { id: each, for_each: "{{list.items}}", url: "{{vars.base}}/hang", timeout: 1h }
                """)
            let running = try OrchestraExecutable.start(
                ["run", file, "--var", "base=\(server.baseURL.absoluteString)", "--output", "json"])
            do {
                try await withHangGuard(SignalTests.guardLimit) { try await server.arrival(of: "/hang") }
            } catch {
                running.child.send(SIGKILL)
                Issue.record("no element's request reached the server: \(await running.finish())")
                throw error
            }
            running.child.send(SIGINT)
            let output = await running.finish(limit: SignalTests.guardLimit)

            #expect(output.status == 130, "\(output.stderr)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output.stderr)")
            let steps = try #require(document["steps"] as? [[String: Any]])
            let each = try #require(steps.first { $0["id"] as? String == "each" })
            #expect(each["state"] as? String == "cancelled")
            let counts = try #require(each["item_counts"] as? [String: Any])
            #expect(counts["total"] as? Int == 200_000 && counts["cancelled"] as? Int == 200_000, "\(counts)")
            let items = try #require(each["items"] as? [[String: Any]])
            #expect(items.count < 1_000, "only the elements started are listed: \(items.count)")
            #expect(items.allSatisfy { $0["state"] as? String == "cancelled" })
        }
    }
}
