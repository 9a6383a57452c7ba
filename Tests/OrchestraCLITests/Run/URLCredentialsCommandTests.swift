import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra run` with credentials in a URL (`http://user:password@host/`) and values that
/// would make a dot segment, on both transports.
@Suite("orchestra run: URL credentials and dot segments", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct URLCredentialsCommandTests {
    static let password = "Pw-s3cret-9"
    /// The `Authorization` the URL's credentials make: a server's echo carries it.
    static let basic = Data("ada:\(password)".utf8).base64EncodedString()

    /// Every text the run wrote: stdout, stderr, and each file in `folder` (reports, traces,
    /// the state file with its `-wal` and `-shm`), read as bytes.
    static func everything(_ outputs: [ProcessOutput], folder: URL) throws -> String {
        var text = outputs.map { $0.stdout + $0.stderr }.joined()
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
            return text
        }
        for case let file as URL in files where !file.hasDirectoryPath {
            text += String(decoding: try Data(contentsOf: file), as: UTF8.self)
        }
        return text
    }

    @Test(
        "the URL's user and password are sent as basic auth, dropped on a redirect to another origin, and never shown",
        arguments: ["asynchttpclient", "urlsession"])
    func credentialsInTheURL(transport: String) async throws {
        try await withDemoServer { server in
            try await withDemoServer { other in
                let base = server.baseURL.absoluteString
                let origin = base.replacingOccurrences(of: "http://", with: "http://ada:\(Self.password)@")
                let file = try WorkflowCommandTests.workflowFile(
                    """
                    name: Credentials
                    steps:
                      - { id: login, url: "\(origin)/basic-auth/ada/\(Self.password)", assert: [ { $.user: ada } ] }
                      - id: away
                        url: "\(origin)/redirect-to?url=\(other.baseURL.absoluteString)/anything"
                        assert:
                          - $.headers.Authorization: { exists: false }
                          - $.headers.authorization: { exists: false }
                      # Fails: the error quotes the echo, which carries the Authorization sent.
                      - { id: echo, url: "\(origin)/anything/echo", expect: [201] }
                    """)
                let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
                let written = folder.appendingPathComponent("out")
                try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
                let text = try await OrchestraExecutable.run([
                    "run", file, "--transport", transport, "--no-color", "-v",
                    "--report-junit", written.appendingPathComponent("junit.xml").path,
                    "--report-html", written.appendingPathComponent("report.html").path,
                    "--trace", written.appendingPathComponent("trace").path,
                    "--state", written.appendingPathComponent("run.state").path,
                ])
                #expect(text.status == 1, "\(text)")
                #expect(text.stdout.contains("✓ login"), "sent as basic auth: \(text)")
                #expect(text.stdout.contains("✓ away"), "dropped on the other origin: \(text)")
                #expect(text.stdout.contains("✗ echo"), "\(text)")
                #expect(text.stdout.contains("http://***@127.0.0.1"), "shown masked: \(text)")
                let json = try await OrchestraExecutable.run([
                    "run", file, "--transport", transport, "--output", "json",
                ])
                #expect(json.status == 1, "\(json)")
                let files = try FileManager.default.subpathsOfDirectory(atPath: written.path)
                for name in ["junit.xml", "report.html", "run.state", "trace"] {
                    #expect(files.contains(name), "\(files)")
                }
                #expect(files.filter { $0.hasPrefix("trace/") }.count >= 2, "the trace's files: \(files)")
                let everything = try Self.everything([text, json], folder: written)
                #expect(!everything.contains(Self.password), "the password is shown somewhere: \(text)\n\(json)")
                #expect(!everything.contains(Self.basic), "the Authorization is shown somewhere: \(text)\n\(json)")
            }
        }
    }

    @Test("a captured '..' goes out encoded, not as a dot segment", arguments: ["asynchttpclient", "urlsession"])
    func dotSegments(transport: String) async throws {
        try await withDemoServer { server in
            let base = server.baseURL.absoluteString
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: dots, url: "\(base)/anything?up=..&here=.", captures: { up: $.args.up, here: $.args.here } }
                  - id: up
                    method: DELETE
                    url: "\(base)/anything/users/{{dots.up}}/delete"
                    assert: [ { $.path: "/anything/users/%2E%2E/delete" } ]
                  - id: here
                    url: "\(base)/anything/users/{{dots.here}}/x"
                    assert: [ { $.path: "/anything/users/%2E/x" } ]
                """)
            let output = try await OrchestraExecutable.run(["run", file, "--transport", transport, "--no-color"])
            #expect(output.status == 0, "\(output)")
        }
    }
}
