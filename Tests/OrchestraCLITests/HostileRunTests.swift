import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// Hostile cases of the catalogue (``HostileInputTests``) that need a run: against the demo
/// server, against a port where nothing listens, or with a trace folder in the way.
@Suite("orchestra on hostile input, running", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct HostileRunTests {
    @Test(
        "a captured value is inserted as text, never read as a template: {{vars.secret}} from a server stays as it is")
    func templateInjectionThroughACapture() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "http://127.0.0.1", secret: s3cret }
                steps:
                  - id: a
                    method: POST
                    url: "{{vars.base}}/echo"
                    body: { t: "{{vars.inject}}" }
                    captures: { t: $.t }
                  - id: b
                    method: POST
                    url: "{{vars.base}}/echo?q={{a.t}}"
                    headers: { X-T: "{{a.t}}" }
                    body: { u: "{{a.t}}" }
                    captures: { u: $.u }
                """)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--var", "inject={{vars.secret}}",
                "--output", "json",
            ])
            #expect(output.status == 0, "\(output)")
            #expect(!output.stdout.contains("s3cret"), "the secret never reaches a request: \(output)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output)")
            let steps = try #require(document["steps"] as? [[String: Any]])
            let captures = try #require(steps.last?["captures"] as? [String: Any])
            #expect(captures["u"] as? String == "{{vars.secret}}", "\(captures)")
        }
    }

    @Test("a huge value a server sends back is quoted by its start and length in the error it causes")
    func hugeServerValueInAnError() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "http://127.0.0.1" }
                steps:
                  - id: a
                    method: POST
                    url: "{{vars.base}}/echo"
                    body: { u: "{{vars.big}}" }
                    captures: { u: $.u }
                  - { id: b, url: "{{a.u}}/next" }
                """)
            let big = String(repeating: "z", count: 100_000)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--var", "big=\(big)",
            ])
            #expect(output.status == 1, "\(MessageText.preview(output.description))")
            #expect(
                output.stdout.contains("the URL 'zzz")
                    && output.stdout.contains("… (100005 characters)' is not an absolute URL"),
                "\(MessageText.preview(output.stdout))")
            #expect(output.stdout.count < 4_000, "\(MessageText.preview(output.stdout))")
        }
    }

    @Test("a valid id and URL of 100,000 characters each run, and the step's lines show their start and length")
    func hugeIDAndURLInTheReport() async throws {
        let id = String(repeating: "a", count: 100_000)
        let file = try WorkflowCommandTests.workflowFile(
            "steps:\n  - id: \(id)\n    url: \"http://127.0.0.1:1/\(String(repeating: "b", count: 100_000))\"\n")
        let output = try await OrchestraExecutable.run(["run", file, "--no-color"])
        #expect(output.status == 1, "\(MessageText.preview(output.description))")
        #expect(
            output.stdout.contains("a… (100000 characters)  GET http://127.0.0.1:1/bbb"),
            "\(MessageText.preview(output.stdout))")
        #expect(output.stdout.contains("connection refused by 127.0.0.1:1"), "\(MessageText.preview(output.stdout))")
        #expect(output.stdout.count < 2_000, "\(MessageText.preview(output.stdout))")
    }

    @Test(
        "nothing listening: the demo says 'connection refused', never a raw Foundation error",
        arguments: ["asynchttpclient", "urlsession"])
    func refusedConnectionInTheDemo(transport: String) async throws {
        let output = try await OrchestraExecutable.run([
            "demo", "--scenario", "1", "--url", "http://127.0.0.1:1/a", "--url", "http://127.0.0.1:1/b", "--transport",
            transport, "--no-color",
        ])
        #expect(output.status == 1, "\(output)")
        #expect(output.stderr.contains("orchestra demo: error: connection refused by 127.0.0.1:1"), "\(output)")
        for raw in ["Domain=", "Code=", "NSURLErrorDomain", "UserInfo", "Error: "] {
            #expect(!(output.stdout + output.stderr).contains(raw), "\(raw): \(output)")
        }
    }

    @Test(
        "--trace with a folder where a trace file goes: refused before anything runs, naming the file",
        arguments: ["run", "demo"])
    func traceFileThatIsAFolder(command: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-trace-\(UUID().uuidString)")
        let name = command == "run" ? "album.trace.json" : "01-out-of-order.trace.json"
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
        let arguments =
            command == "run"
            ? [
                "run", WorkflowCommandTests.example("album.yaml"), "--var", "base=http://127.0.0.1:1", "--trace",
                folder.path,
            ]
            : ["demo", "--scenario", "1", "--speed", "1000", "--trace", folder.path]
        let output = try await OrchestraExecutable.run(arguments)
        #expect(output.status == 2, "\(output)")
        #expect(
            output.stderr.contains(
                "orchestra \(command): error: --trace: cannot write the trace file '\(folder.path)/\(name)': it is a folder"
            ), "\(output)")
        #expect(!output.stderr.contains("Domain="), "\(output)")
        #expect(output.stdout.isEmpty, "nothing ran: \(output)")
    }
}
