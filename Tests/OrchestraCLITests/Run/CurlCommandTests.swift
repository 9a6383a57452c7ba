import Foundation
import HTTPTypes
import OrchestraDemoServer
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

@testable import OrchestraCLI

/// `orchestra run --curl` prints each request as a curl command line that sends it again:
/// run through `sh` against the demo server, each gets the response the run got.
@Suite("orchestra run --curl", .serialized, .timeLimit(.minutes(3)), .takesTurns)
struct CurlCommandTests {
    static let secret = "Sekr1t Pass'42%"

    /// A workflow whose requests take every path of the printed command: a JSON body with a
    /// secret in it and in the query, a text body with line breaks, quotes, `%` and `\`
    /// (through printf), a body file, a header with a quote, the auth block's token. Each
    /// step saves its response in `folder`.
    static func workflow(base: String, folder: URL) throws -> String {
        try Data("from a file\n".utf8).write(to: folder.appendingPathComponent("note.txt"))
        let out = folder.path
        return try WorkflowCommandTests.workflowFile(
            """
            vars: { base: "\(base)", pass: "\(secret)" }
            secrets: [pass]
            auth:
              login: { url: "{{vars.base}}/login", token: $.access_token }
            steps:
              - id: json
                method: POST
                url: "{{vars.base}}/anything?q=a%20b&pw={{vars.pass}}"
                headers: { X-Quote: "it's [x] {y}" }
                body: { password: "{{vars.pass}}", n: 1 }
                save_to: "\(out)/json.out"
              - id: text
                method: POST
                url: "{{vars.base}}/anything"
                headers: { Content-Type: text/plain }
                body: "line 1\\nit's 100% \\\\ done\\ttab\\n"
                save_to: "\(out)/text.out"
              - id: file
                method: PUT
                url: "{{vars.base}}/anything"
                body_file: "\(out)/note.txt"
                save_to: "\(out)/file.out"
              - id: signed
                url: "{{vars.base}}/anything/me"
                save_to: "\(out)/signed.out"
              - id: empty
                method: POST
                url: "{{vars.base}}/anything"
                save_to: "\(out)/empty.out"
              - id: head
                method: HEAD
                url: "{{vars.base}}/anything"
              - id: parts
                method: POST
                url: "{{vars.base}}/anything"
                multipart:
                  - { name: note, value: "it's {{vars.pass}}" }
                  - { name: upload, file: "\(out)/note.txt", content_type: text/plain }
                save_to: "\(out)/parts.out"
              - id: dash
                method: POST
                url: "{{vars.base}}/anything"
                headers: { Content-Type: text/plain }
                body: "-n\\nnot an option"
                save_to: "\(out)/dash.out"
            """, name: "curl.yaml")
    }

    /// The command printed after `# label`.
    static func command(_ label: String, in stderr: String) -> String? {
        let lines = stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let index = lines.firstIndex(of: "# \(label)"), index + 1 < lines.count else { return nil }
        return lines[index + 1]
    }

    /// A JSON echo without what the client's own compression settings put in it.
    static func comparable(_ data: Data) throws -> NSDictionary {
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var copy = object
        for key in ["headers", "headersHex"] {
            var headers = copy[key] as? [String: Any] ?? [:]
            headers["Accept-Encoding"] = nil
            copy[key] = headers
        }
        return copy as NSDictionary
    }

    @Test func eachPrintedCommandGetsTheResponseTheRunGot() async throws {
        try await withDemoServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-curl-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = try Self.workflow(base: server.baseURL.absoluteString, folder: folder)
            let output = try await OrchestraExecutable.run(["run", file, "--curl-unmasked"])
            #expect(output.status == 0, "\(output)")
            #expect(Self.command("auth", in: output.stderr)?.hasPrefix("curl -X POST ") == true, "\(output.stderr)")
            #expect(Self.command("text", in: output.stderr)?.hasPrefix("printf -- '") == true, "\(output.stderr)")
            #expect(Self.command("parts", in: output.stderr)?.hasPrefix("printf -- '--") == true, "\(output.stderr)")
            #expect(Self.command("file", in: output.stderr)?.contains("--data-binary '@") == true, "\(output.stderr)")
            #expect(Self.command("head", in: output.stderr)?.hasPrefix("curl --head ") == true, "\(output.stderr)")
            // Each line replayed by the POSIX shell and by bash.
            for shell in ["/bin/sh", "/bin/bash"] where FileManager.default.isExecutableFile(atPath: shell) {
                for label in ["json", "text", "file", "signed", "empty", "parts", "dash"] {
                    let line = try #require(Self.command(label, in: output.stderr), "no # \(label) in \(output.stderr)")
                    let replay = try await OrchestraExecutable.run(
                        ["-c", line + " --silent --show-error"], executable: URL(fileURLWithPath: shell))
                    #expect(replay.status == 0, "\(shell) \(label): \(line)\n\(replay)")
                    let saved = try Data(contentsOf: folder.appendingPathComponent("\(label).out"))
                    #expect(
                        try Self.comparable(Data(replay.stdout.utf8)) == Self.comparable(saved),
                        "\(shell) \(label): \(line)\ncurl: \(replay.stdout)\nrun:  \(String(decoding: saved, as: UTF8.self))"
                    )
                }
            }
        }
    }

    @Test func theSecretsAreMaskedUnlessUnmasked() async throws {
        try await withDemoServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-curl-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = try Self.workflow(base: server.baseURL.absoluteString, folder: folder)
            let masked = try await OrchestraExecutable.run(["run", file, "--curl"])
            #expect(masked.status == 0, "\(masked)")
            let signed = try #require(Self.command("signed", in: masked.stderr))
            #expect(signed.contains("-H 'Authorization: ***'"), "\(signed)")
            let json = try #require(Self.command("json", in: masked.stderr))
            #expect(json.contains(#""password":"***""#), "\(json)")
            for form in SecretLeakCommandTests.forms(of: Self.secret) + ["Sekr1t%20Pass"] {
                #expect(!masked.stderr.contains(form), "the secret's form \(form) in \(masked.stderr)")
            }
            let unmasked = try await OrchestraExecutable.run(["run", file, "--curl-unmasked"])
            #expect(Self.command("signed", in: unmasked.stderr)?.contains("-H 'Authorization: Bearer ") == true)
            #expect(Self.command("json", in: unmasked.stderr)?.contains(#"Sekr1t Pass'\''42%"#) == true)
        }
    }

    @Test func eachAttemptAndRedirectHopIsALine() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - { id: hop, url: "{{vars.base}}/redirect/2" }
                  - { id: again, url: "{{vars.base}}/status/503", retry: { attempts: 2, backoff: 0s } }
                """)
            let output = try await OrchestraExecutable.run(["run", file, "--curl"])
            #expect(output.status == 1, "the 503 step fails after its retry: \(output)")
            let lines = output.stderr.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0 == "# hop" }.count == 3, "the request and two redirect hops: \(output.stderr)")
            let hops = lines.indices.filter { lines[$0] == "# hop" }.map { lines[$0 + 1] }
            #expect(hops.first?.contains("/redirect/2'") == true, "\(hops)")
            #expect(hops.last?.contains("/get'") == true || hops.last?.contains("/anything'") == true, "\(hops)")
            #expect(lines.filter { $0 == "# again" }.count == 2, "each attempt: \(output.stderr)")
        }
    }

    @Test func theRunsTLSSettingsAndProxyGoOnTheLine() {
        var log = CurlLog(redactor: Redactor(secrets: ["pw-123456"]), console: .standardError)
        log.tlsArguments = ["--cacert", "/etc/ca b.pem", "--insecure"]
        log.proxyArguments = ["--proxy", "http://u:pw-123456@proxy.test:3128"]
        let https = log.command(for: HTTPRequest(method: .get, scheme: "https", authority: "h", path: "/"), body: nil)
        #expect(
            https.hasPrefix(
                "curl 'https://h/' --cacert '/etc/ca b.pem' --insecure --proxy 'http://u:***@proxy.test:3128' "),
            "\(https)")
        let http = log.command(for: HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/"), body: nil)
        #expect(http.hasPrefix("curl 'http://h/' --proxy 'http://u:***@proxy.test:3128' "), "\(http)")
    }

    @Test func aLargeOrBinaryBodyIsLeftOutWithANote() {
        let log = CurlLog(redactor: nil, console: .standardError)
        var request = HTTPRequest(method: .post, scheme: "http", authority: "h", path: "/")
        request.headerFields[.contentType] = "application/octet-stream"
        let binary = log.command(for: request, body: .data(Data([0xFF, 0x00, 0xFE])))
        #expect(
            binary.hasSuffix(
                "--data-binary @body  # the body (3 bytes, not UTF-8 text) is not shown: save it as ./body"))
        let large = log.command(for: request, body: .data(Data(repeating: 0x61, count: CurlLog.bodyLimit + 1)))
        #expect(large.contains("--data-binary @body  # the body (65537 bytes) is not shown"))
        #expect(CurlLog.printf("a\n1%'\\") == #"printf -- 'a\0121%%'\''\\'"#)
        // A character the terminal would act on is written as octal bytes, also in a word.
        #expect(CurlLog.quoted("a\u{202E}b'") == #""$(printf -- 'a\342\200\256b'\''')""#)
        #expect(CurlLog.quoted("it's") == #"'it'\''s'"#)
    }
}
