import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@Suite("TaskGraph exports", .timeLimit(.minutes(1)), .takesTurns)
struct TaskGraphExportTests {
    func sampleGraph() -> TaskGraph {
        let graph = TaskGraph()
        let login = graph.add("login") { 1 }
        let quoted = graph.add("say \"hi\"", after: login) { $0 }
        graph.add("report", afterOutcomesOf: quoted) { _ in 0 }
        return graph
    }

    @Test func dotListsNodesAndEdgesInWorkOrder() {
        let dot = sampleGraph().dot()
        #expect(dot.hasPrefix("digraph \"TaskGraph\" {"))
        #expect(dot.contains("\"login\" -> \"say \\\"hi\\\"\";"))
        #expect(dot.contains("\"say \\\"hi\\\"\" -> \"report\" [style=dashed];"))
    }

    @Test func mermaidUsesSafeKeysWithTheRealIdsAsLabels() {
        let mermaid = sampleGraph().mermaid()
        #expect(
            mermaid == """
                flowchart LR
                  n0["login"]
                  n1["say #quot;hi#quot;"]
                  n2["report"]
                  n0 --> n1
                  n1 -.-> n2

                """)
    }

    @Test func chromeTraceHasOneCompleteEventPerNodeInNonOverlappingLanes() async throws {
        let clock = ManualClock()
        let graph = TaskGraph()
        let a = graph.add("a") { try await clock.sleep(for: .milliseconds(3)) }
        graph.add("b") { try await clock.sleep(for: .milliseconds(5)) }
        let c = graph.add("c", after: a) { _ in try await clock.sleep(for: .milliseconds(1)) }
        graph.add("d", after: c) { _ in try await clock.sleep(for: .milliseconds(2)) }
        let run = Task { try await graph.run(limit: 2, clock: clock) }
        // Each step waits until the node started by the previous end is asleep, so every end
        // below is recorded before the clock moves on.
        try await clock.waitForSleepers(2)
        clock.advanceToNextDeadline()  // 3 ms: a ends, c starts
        try await clock.waitForSleepers(2)
        clock.advanceToNextDeadline()  // 4 ms: c ends, d starts
        try await clock.waitForSleepers(2)
        clock.advanceToNextDeadline()  // 5 ms: b ends
        clock.advanceToNextDeadline()  // 6 ms: d ends
        let result = try await run.value

        let json = try JSONSerialization.jsonObject(with: Data(result.chromeTrace().utf8)) as! [String: Any]
        let events = json["traceEvents"] as! [[String: Any]]
        #expect(events.count == 4)
        var byName: [String: [String: Any]] = [:]
        for event in events { byName[event["name"] as! String] = event }
        #expect(byName["a"]?["ts"] as? Int == 0 && byName["a"]?["dur"] as? Int == 3_000)
        #expect(byName["c"]?["ts"] as? Int == 3_000 && byName["c"]?["dur"] as? Int == 1_000)
        #expect(byName["c"]?["tid"] as? Int == byName["a"]?["tid"] as? Int, "c reuses a's lane once a ended")
        #expect(byName["b"]?["tid"] as? Int != byName["a"]?["tid"] as? Int)
        #expect((byName["b"]?["args"] as? [String: Any])?["outcome"] as? String == "succeeded")
        #expect(events.allSatisfy { $0["ph"] as? String == "X" })
    }
}
