import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// JSON bodies and captures keep numbers and member order exactly as written (issue 13): a body
/// is sent as written or the workflow is refused, never something else.
@Suite("WorkflowRunner: JSON bodies", .timeLimit(.minutes(1)), .takesTurns)
struct JSONBodyTests {
    /// A transport that answers `response(path)` and records every body it receives by path.
    static func recording(
        _ bodies: EventLog<(String, String)>, response: @escaping @Sendable (String) -> String = { _ in "{}" }
    )
        -> ScriptedHTTPTransport
    {
        ScriptedHTTPTransport { request, body in
            bodies.append((request.path ?? "", body.map { String(decoding: $0, as: UTF8.self) } ?? "<no body>"))
            return respond(200, response(request.path ?? ""))
        }
    }

    @Test func aYAMLBodyIsSentWithItsNumbersAndOrderAsWritten() async throws {
        let bodies = EventLog<(String, String)>()
        let transport = Self.recording(bodies)
        let workflow = try parse(
            """
            steps:
              - id: send
                method: POST
                url: "http://x.test/numbers"
                body:
                  zeta: 12345678901234567890
                  alpha: -0.0
                  one: 1.0
                  huge: 1e400
                  tenth: 0.1
                  list: [1, 2.50, -7, 0x1F, .5]
                  nested: { b: true, a: null, "n": "text" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report)")
        #expect(
            bodies.events.map(\.1) == [
                #"{"zeta":12345678901234567890,"alpha":-0.0,"one":1.0,"huge":1e400,"tenth":0.1,"list":[1,2.50,-7,31,0.5],"nested":{"b":true,"a":null,"n":"text"}}"#
            ])
    }

    @Test func aCapturedNumberIsSentOnUnchanged() async throws {
        let bodies = EventLog<(String, String)>()
        let transport = Self.recording(bodies) { path in
            path == "/first" ? #"{"id":12345678901234567890,"ratio":1.0,"tiny":1e-400,"order":{"z":1,"a":2}}"# : "{}"
        }
        let workflow = try parse(
            """
            steps:
              - { id: first, url: "http://x.test/first", captures: { id: $.id, ratio: $.ratio, tiny: $.tiny, order: $.order } }
              - id: again
                method: POST
                url: "http://x.test/again?id={{first.id}}&ratio={{first.ratio}}"
                body: { id: "{{first.id}}", ratio: "{{first.ratio}}", tiny: "{{first.tiny}}", order: "{{first.order}}", note: "id {{first.id}}" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report)")
        #expect(report["first"]?.captures.first == JSONValue.Member("id", .number(JSONNumber("12345678901234567890")!)))
        #expect(report["again"]?.url == "http://x.test/again?id=12345678901234567890&ratio=1.0")
        #expect(
            bodies.events.last?.1
                == #"{"id":12345678901234567890,"ratio":1.0,"tiny":1e-400,"order":{"z":1,"a":2},"note":"id 12345678901234567890"}"#
        )
    }

    @Test func theDemoServerReceivesTheNumbersAsWritten() async throws {
        try await withDemoServer { server in
            // POST /echo answers the body it received: captured from it, re-sent, echoed again.
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: first
                    method: POST
                    url: "{{vars.base}}/echo"
                    body: { big: 12345678901234567890, one: 1.0, zero: -0.0 }
                    captures: { big: $.big, one: $.one, zero: $.zero }
                  - id: second
                    method: POST
                    url: "{{vars.base}}/echo"
                    body: { big: "{{first.big}}", one: "{{first.one}}", zero: "{{first.zero}}" }
                    captures: { all: $ }
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report.allSucceeded, "\(report)")
            #expect(
                report["second"]?.captures.first?.value.text == #"{"big":12345678901234567890,"one":1.0,"zero":-0.0}"#)
        }
    }

    @Test(arguments: [
        (
            "0x1FFFFFFFFFFFFFFFFFFF",
            "'0x1FFFFFFFFFFFFFFFFFFF' is not a JSON number; write it in decimal digits (any size), or quote it to send text"
        ),
        (".inf", "'.inf' is not a JSON number; quote it to send text"),
        (".nan", "'.nan' is not a JSON number; quote it to send text"),
    ])
    func aNumberJSONCannotWriteRefusesTheWorkflow(_ literal: String, _ message: String) {
        let problems = errors(
            """
            steps:
              - { id: a, method: POST, url: "http://x.test/a", body: { n: [1, \(literal)] } }
            """)
        #expect(problems.map(\.code) == [.invalidValue])
        #expect(problems.first?.message == message)
        #expect(problems.first?.field == "body.n[1]")
    }

    @Test func aBodyNestedBeyondTheLimitRefusesTheWorkflow() {
        let depth = JSONValue.maxDepth + 1
        let body = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
        let problems = errors("steps:\n  - { id: a, method: POST, url: \"http://x.test/a\", body: { n: \(body) } }\n")
        #expect(problems.map(\.message) == ["lists and mappings nested deeper than 512 levels"])
    }
}
