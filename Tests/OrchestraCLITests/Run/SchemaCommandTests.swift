import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra run` and `validate` with `schema:` assertions, against the demo server.
@Suite("orchestra run: JSON Schema assertions", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct SchemaCommandTests {
    @Test("the example passes against the demo server")
    func example() async throws {
        try await withDemoServer { server in
            let document = try await WorkflowCommandTests.jsonReport(of: "user-schema.yaml", server: server)
            let steps = try #require(document["steps"] as? [[String: Any]])
            let checks = try #require(steps.first?["assertions"] as? [[String: Any]])
            #expect(checks.map { $0["operator"] as? String } == ["schema", "schema"])
            #expect(checks.map { $0["passed"] as? Bool } == [true, true])
            #expect(checks.first?["failures"] as? [String] == [])
        }
    }

    @Test("a value that does not match exits 1 and lists each wrong value by its JSON pointer, one a line")
    func failures() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - id: user
                    url: "\(server.baseURL.absoluteString)/broken-users/7"
                    assert:
                      - $.orders: { schema: { type: array, items: { $ref: "#/$defs/order" }, $defs: { order: { required: [id], properties: { id: { type: integer } } } } } }
                """)
            let text = try await OrchestraExecutable.run(["run", file, "--no-color"])
            #expect(text.status == 1, "\(text)")
            #expect(text.stdout.contains("1 of 1 assertions failed:"), "\(text)")
            let lines = text.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let start = try #require(lines.firstIndex(of: "✗ $.orders schema inline schema:"), "\(text)")
            #expect(
                Array(lines[(start + 1)...].prefix(2)) == [
                    "/0/id: expected integer, got string", "/1: required property 'id' is missing",
                ], "\(text)")
            let json = try await OrchestraExecutable.run(["run", file, "--output", "json"])
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
            let step = try #require((document["steps"] as? [[String: Any]])?.first)
            let check = try #require((step["assertions"] as? [[String: Any]])?.first)
            #expect(check["operator"] as? String == "schema" && check["expected"] as? String == "inline schema")
            #expect(
                check["failures"] as? [String] == [
                    "/0/id: expected integer, got string", "/1: required property 'id' is missing",
                ])
        }
    }

    @Test("validate reads the schema file and names a wrong keyword's place in it")
    func validate() async throws {
        let file = try WorkflowCommandTests.workflowFile(
            """
            steps:
              - id: user
                url: "http://127.0.0.1:1/users/7"
                assert:
                  - $: { schema: user.schema.json }
            """)
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        try Data(#"{"type": "object",\#n "properties": {"id": {"type": "strng"}}}"#.utf8)
            .write(to: folder.appendingPathComponent("user.schema.json"))
        let output = try await OrchestraExecutable.run(["validate", file])
        #expect(output.status == 2, "\(output)")
        #expect(
            output.stderr.contains(
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': schema file 'user.schema.json', line 2, column 32: /properties/id/type: unknown type 'strng'; did you mean 'string'?"
            ), "\(output)")
    }
}
