import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `include:` through the command: the example against the demo server, `validate` naming each
/// problem's own file, `graph` drawing each included file in a box.
@Suite("orchestra run/validate/graph with include:", .serialized, .timeLimit(.minutes(3)), .takesTurns)
struct IncludeCommandTests {
    @Test func theIncludeExampleRunsAgainstTheDemoServer() async throws {
        try await withDemoServer { server in
            let output = try await OrchestraExecutable.run([
                "run", WorkflowCommandTests.example("include.yaml"), "--var", "base=\(server.baseURL.absoluteString)",
            ])
            #expect(output.status == 0, "\(output)")
            for step in ["login", "profile", "ada_greet", "grace_greet", "orders", "note"] {
                #expect(output.stdout.contains("✓ \(step) "), "\(step): \(output)")
            }
            #expect(server.loginCalls == 1)
        }
    }

    @Test func validateNamesEachProblemsOwnFile() async throws {
        let file = try WorkflowCommandTests.workflowFile(
            """
            include: [parts/login.yaml]
            steps:
              - { id: me, url: "{{vars.base}}/me", needs: [logn] }
            """)
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("parts"), withIntermediateDirectories: true)
        try Data(
            """
            vars: { base: "http://127.0.0.1:1" }
            steps:
              - id: login
                url: "{{vars.bse}}/login"
            """.utf8
        ).write(to: folder.appendingPathComponent("parts/login.yaml"))
        let output = try await OrchestraExecutable.run(["validate", file])
        #expect(output.status == 2, "\(output)")
        let lines = output.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("\(file):3:") == true && lines.first?.contains("'logn'") == true, "\(output)")
        let included = (file as NSString).deletingLastPathComponent + "/parts/login.yaml:4:10: "
        #expect(lines.contains { $0.hasPrefix(included) && $0.contains("'bse'") }, "\(output)")
    }

    @Test func theIncludedFilesTogetherKeepToTheInputFileLimit() async throws {
        // Each file is under the limit (1,000 bytes here); three of them are not.
        let padding = "# " + String(repeating: "x", count: 400) + "\n"
        let file = try WorkflowCommandTests.workflowFile("include: [a.yaml, b.yaml, c.yaml]")
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        for name in ["a", "b", "c"] {
            try Data((padding + "steps: [{ id: \(name), url: \"http://127.0.0.1:1/\" }]\n").utf8).write(
                to: folder.appendingPathComponent("\(name).yaml"))
        }
        let output = try await OrchestraExecutable.run(
            ["validate", file], environment: ["ORCHESTRA_INPUT_FILE_LIMIT": "1000"])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("/c.yaml: the included files add up to more than 1000 bytes"), "\(output)")
        #expect(output.stderr.split(separator: "\n").count == 2, "one problem and the count: \(output)")
    }

    @Test func graphDrawsEachIncludedFileInABox() async throws {
        let output = try await OrchestraExecutable.run([
            "graph", WorkflowCommandTests.example("include.yaml"), "--format", "mermaid",
        ])
        #expect(output.status == 0, "\(output)")
        #expect(output.stdout.contains(#"subgraph g0 [""#) && output.stdout.contains(#"shared/login.yaml"]"#))
        #expect(output.stdout.contains(#"shared/greet.yaml as ada_"]"#), "\(output)")
        #expect(output.stdout.contains(#"shared/greet.yaml as grace_"]"#), "\(output)")
    }
}
