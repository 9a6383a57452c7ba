import Foundation
import TestSupport
import Testing

@testable import Orchestra

@Suite("DOT, Mermaid and Chrome trace writers", .timeLimit(.minutes(1)), .takesTurns)
struct DiagramWriterTests {
    @Test func dotQuotesEveryIdAndLabelAndMarksLooseEdges() {
        var writer = DOTWriter(name: "my \"flow\"")
        writer.node("a\\b", label: [])
        writer.node("b", label: ["b", "GET /x"])
        writer.edge(from: "a\\b", to: "b", dashed: false, label: nil)
        writer.edge(from: "b", to: "c", dashed: true, label: "token")
        let lines = writer.render().split(separator: "\n").map(String.init)
        #expect(lines.first == #"digraph "my \"flow\"" {"#)
        #expect(lines.contains(#"  "a\\b";"#))
        #expect(lines.contains(#"  "b" [label="b\nGET /x"];"#))
        #expect(lines.contains(#"  "a\\b" -> "b";"#))
        #expect(lines.contains(#"  "b" -> "c" [style=dashed, label="token"];"#))
        #expect(lines.last == "}")
    }

    @Test func mermaidGivesEachIdOneKeyAndABoxEvenWhenOnlyAnEdgeNamesIt() {
        var writer = MermaidWriter()
        writer.node("a", label: ["a", "<b>"])
        writer.edge(from: "a", to: "a", dashed: false, label: nil)
        writer.edge(from: "a", to: "ghost \"x\"", dashed: true, label: nil)
        writer.edge(from: "ghost \"x\"", to: "a", dashed: false, label: "p, q")
        writer.edge(from: "a", to: "ghost \"x\"", dashed: true, label: "r")
        #expect(
            writer.render() == """
                flowchart LR
                  n0["a<br/>#lt;b#gt;"]
                  n0 --> n0
                  n1["ghost #quot;x#quot;"]
                  n0 -.-> n1
                  n1 -- "p, q" --> n0
                  n0 -. "r" .-> n1

                """)
    }

    @Test func chromeTraceIsValidJSONWithNamedLanesAndJobsInStartOrder() throws {
        var trace = ChromeTraceWriter()
        trace.nameLane(1, "lane \"one\"")
        trace.job("late", category: "step", lane: 1, start: .milliseconds(5), end: .milliseconds(7))
        trace.job(
            "early\n", category: "step", lane: 2, start: .microseconds(1.5), end: .milliseconds(2),
            args: [("outcome", .text("failed")), ("attempts", .number(3))])
        let json = try JSONSerialization.jsonObject(with: Data(trace.render(title: "t").utf8)) as! [String: Any]
        let events = json["traceEvents"] as! [[String: Any]]
        #expect(events.map { $0["name"] as? String } == ["thread_name", "early\n", "late"])
        #expect((events[0]["args"] as? [String: Any])?["name"] as? String == "lane \"one\"")
        #expect(events[1]["ts"] as? Double == 1.5 && events[1]["dur"] as? Double == 1_998.5)
        #expect(events[1]["tid"] as? Int == 2 && events[2]["ts"] as? Int == 5_000)
        let args = events[1]["args"] as? [String: Any]
        #expect(args?["outcome"] as? String == "failed" && args?["attempts"] as? Int == 3)
        #expect((json["otherData"] as? [String: Any])?["title"] as? String == "t")
        #expect(try JSONSerialization.jsonObject(with: Data(ChromeTraceWriter().render().utf8)) is [String: Any])
    }
}
