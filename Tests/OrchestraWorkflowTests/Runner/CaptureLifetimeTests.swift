import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// How long a `for_each` element's captures live: until the step ends only if something can
/// read them (another step's template, or the element reports the runner keeps).
@Suite("WorkflowRunner: for_each captures nothing reads are freed", .timeLimit(.minutes(1)), .takesTurns)
struct CaptureLifetimeTests {
    /// `each` captures `body` (the whole response) and `n`; `done` reads only `{{each.n}}`.
    static let workflow = """
        steps:
          - { id: list, url: "http://x.test/list", captures: { items: $ } }
          - id: each
            for_each: "{{list.items}}"
            url: "http://x.test/item/{{item}}"
            captures: { body: $, n: $.n }
          - { id: done, url: "http://x.test/done", method: POST, body: { ns: "{{each.n}}" } }
        """

    static func transport(doneBody: Locked<String?>) -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, body in
            let path = request.path ?? ""
            if path == "/list" { return respond(200, "[0,1,2,3]") }
            if path.hasPrefix("/item/") {
                let n = path.dropFirst("/item/".count)
                return respond(200, #"{"n":\#(n),"padding":"\#(String(repeating: "x", count: 10_000))"}"#)
            }
            doneBody.withLock { $0 = String(decoding: body ?? Data(), as: UTF8.self) }
            return respond()
        }
    }

    @Test func aCaptureNoTemplateReadsIsNotKeptWhenElementReportsAreNot() async throws {
        let doneBody = Locked<String?>(nil)
        let report = try await withHangGuard {
            await WorkflowRunner(
                workflow: try parse(Self.workflow), transport: Self.transport(doneBody: doneBody),
                keepsItemReports: false
            ).run(clock: ManualClock())
        }
        #expect(report.allSucceeded)
        let each = try #require(report["each"])
        #expect(each.captures.map(\.key) == ["body", "n"], "the report still names every capture")
        #expect(each.captures.first { $0.key == "body" }?.value == .null, "nothing reads {{each.body}}")
        #expect(each.captures.first { $0.key == "n" }?.value == .array((0..<4).map { .integer($0) }))
        #expect(doneBody.withLock { $0 } == #"{"ns":[0,1,2,3]}"#)
    }

    @Test func everyCaptureIsKeptWhenElementReportsAre() async throws {
        let doneBody = Locked<String?>(nil)
        let report = try await withHangGuard {
            await WorkflowRunner(
                workflow: try parse(Self.workflow), transport: Self.transport(doneBody: doneBody),
                keepsItemReports: true
            ).run(clock: ManualClock())
        }
        let each = try #require(report["each"])
        guard case .array(let bodies) = each.captures.first(where: { $0.key == "body" })?.value else {
            Issue.record("the bodies are kept for the JSON report: \(each.captures.map(\.key))")
            return
        }
        #expect(bodies.count == 4)
        #expect(each.items?.allSatisfy { $0.captures.map(\.key) == ["body", "n"] } == true)
        #expect(doneBody.withLock { $0 } == #"{"ns":[0,1,2,3]}"#)
    }
}
