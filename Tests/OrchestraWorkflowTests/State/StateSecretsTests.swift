import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// What a `--state` file holds: what the run shows (secrets masked), and only the captures a
/// resume may send that hold no secret.
@Suite("The --state file keeps no secret", .timeLimit(.minutes(1)), .takesTurns)
struct StateSecretsTests {
    static let token = "S3cr3t-Tok3n-77"
    static let password = "Pw-s3cret-9"

    static let workflow = """
        vars: { token: "\(token)" }
        secrets: [token]
        steps:
          - { id: a, url: "http://x.test/a?key={{vars.token}}", captures: { echo: $.echo, id: $.id } }
          - id: b
            url: "http://ada:\(password)@x.test/b/{{a.id}}"
            headers: { X-Echo: "{{a.echo}}" }
            expect: [201]
          - { id: c, method: POST, url: "http://x.test/c?key={{vars.token}}", expect: [201] }
        """

    /// Echoes the token in every body; when `failing`, every path but `/a` answers 200 (the
    /// steps expect 201).
    static func server(failing: Bool) -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, _ in
            let status = request.path?.hasPrefix("/a") == false && failing ? 200 : 201
            return respond(status, #"{"echo":"\#(token)","id":7}"#)
        }
    }

    /// Every byte of the state file and its companions (`-wal`, `-shm`), as text.
    static func bytes(ofFilesBeside path: String) throws -> String {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        var text = ""
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            text += String(decoding: try Data(contentsOf: folder.appendingPathComponent(name)), as: UTF8.self)
        }
        return text
    }

    @Test func theFileHoldsNoSecretAndAResumeReadsAgainTheCaptureThatHeldOne() async throws {
        let workflow = try parse(Self.workflow)
        try await withStateFile { path in
            let first = Self.server(failing: true)
            let report = try await withHangGuard {
                try await runWithState(workflow, path: path, transport: first)
            }
            #expect(report["a"]?.state == .succeeded)
            #expect(report["b"]?.state == .failed && report["c"]?.state == .failed)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let stored = try Self.bytes(ofFilesBeside: path)
            #expect(stored.contains("http://x.test/a?key=***"), "the URL as shown")
            #expect(stored.contains("http://***@x.test/b/7"))
            #expect(stored.contains("expected 201, got 200"), "the error, masked")
            for secret in [Self.token, Self.password, Data(Self.token.utf8).base64EncodedString()] {
                #expect(!stored.contains(secret), "\(secret) is in the state file")
            }

            // The resume sends `a` again to read the capture the file did not keep, and `b`
            // gets its value, not a mask.
            let second = Self.server(failing: false)
            let resumed = try await withHangGuard {
                try await runWithState(workflow, path: path, transport: second)
            }
            #expect(resumed.allSucceeded)
            #expect(
                second.requests.compactMap(\.path).sorted() == ["/a?key=\(Self.token)", "/b/7", "/c?key=\(Self.token)"])
            let echoed = second.requests.first { $0.path == "/b/7" }?.headerFields[HTTPField.Name("X-Echo")!]
            #expect(echoed == Self.token)
            #expect(!(try Self.bytes(ofFilesBeside: path)).contains(Self.token))
        }
    }

    @Test func aCaptureWithoutSecretIsKeptAndReused() async throws {
        let workflow = try parse(
            """
            steps:
              - { id: a, url: "http://x.test/a", captures: { id: $.id } }
              - { id: b, url: "http://x.test/b/{{a.id}}", expect: [201] }
            """)
        try await withStateFile { path in
            _ = try await runWithState(workflow, path: path, transport: Self.server(failing: true))
            let second = Self.server(failing: false)
            #expect(try await runWithState(workflow, path: path, transport: second).allSucceeded)
            #expect(second.requests.compactMap(\.path) == ["/b/7"])
        }
    }
}
