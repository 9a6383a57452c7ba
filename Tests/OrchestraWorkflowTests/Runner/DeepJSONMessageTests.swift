import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// A JSON body nested deeper than the parser reads is named so, not "not JSON" (issue 32),
/// wherever a step reads the body: a capture, several captures, an assertion.
@Suite("WorkflowRunner: a body nested too deep", .timeLimit(.minutes(1)), .takesTurns)
struct DeepJSONMessageTests {
    static let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)

    @Test(arguments: [
        (#"captures: { x: "$[0]" }"#, "so the captures x cannot be read"),
        (#"captures: { x: "$[0]", y: "$[1]" }"#, "so the captures x, y cannot be read"),
        (#"assert: [{ "$[0]": 1 }]"#, "is JSON nested deeper than 512"),
    ])
    func theMessageSaysNestedTooDeep(fields: String, says: String) async throws {
        let transport = ScriptedHTTPTransport { _, _ in
            respond(200, Self.deep, headers: [.contentType: "application/json"])
        }
        let workflow = try parse("steps:\n  - { id: a, url: \"http://x.test/a\", \(fields) }\n")
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let message = "\(report["a"]?.error ?? "")\(report["a"]?.assertions.map { "\($0)" } ?? [])"
        #expect(
            message.contains(
                "the response (application/json) is JSON nested deeper than 512 levels of arrays and objects (the most that is read)"
            ), "\(message)")
        #expect(message.contains(says), "\(message)")
        #expect(!message.contains("is not JSON"), "\(message)")
    }
}
