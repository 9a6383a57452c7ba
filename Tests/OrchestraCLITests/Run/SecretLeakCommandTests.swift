import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// `orchestra run` never prints a secret: the `secrets:` values, the auth block's token and
/// every form a filter or a server's echo gives them, in every output the run writes.
@Suite("orchestra run: secrets in no output", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct SecretLeakCommandTests {
    /// A space and a slash: percent-encoded in a URL.
    static let secret = "Sekr1t Plain/Pass-42"

    /// Forms of `text` that must appear nowhere: as it is, its start (what a cut leaks), \u-,
    /// hex-, base64- and base64url-encoded (whole, and the characters that depend on it alone
    /// inside a longer base64 text, at each byte alignment).
    static func forms(of text: String) -> [String] {
        let bytes = Array(text.utf8)
        var forms = [text, String(text.prefix(6))]
        forms.append(text.unicodeScalars.prefix(3).map { String(format: "\\u%04x", $0.value) }.joined())
        forms.append(bytes.map { String(format: "%02x", $0) }.joined())
        forms.append(bytes.map { String(format: "%02X", $0) }.joined())
        for offset in 0..<3 {
            let base64 = Array(Data([UInt8](repeating: 0, count: offset) + bytes).base64EncodedString())
            let core = String(base64[(8 * offset + 5) / 6..<8 * (offset + bytes.count) / 6])
            forms += [core, core.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")]
        }
        return forms
    }

    /// Every byte the run wrote: stdout, stderr and each file under `folder`.
    static func everything(_ output: ProcessOutput, folder: URL) throws -> [(String, String)] {
        var texts = [("stdout", output.stdout), ("stderr", output.stderr)]
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard !file.hasDirectoryPath, file.pathExtension != "yaml" else { continue }
            texts.append((file.lastPathComponent, String(decoding: try Data(contentsOf: file), as: UTF8.self)))
        }
        return texts
    }

    @Test(
        "the token, the secrets, their filters' outputs and echoes (\\u, base64, hex, cut at 200 characters or 2 KB) appear in no output"
    )
    func noOutputHoldsASecret() async throws {
        try await withDemoServer { server in
            let base = server.baseURL.absoluteString
            // The secret written as a server that escapes every character sends it back.
            let escaped = Self.secret.unicodeScalars.map { String(format: "\\u%04x", $0.value) }.joined()
            // In /anything's echo, the secret starts at character 190 of the body: the 200-character cut of
            // the error's quote falls inside it.
            let pad = String(repeating: "p", count: 190 - #"{"args":{"pad":""#.count - #"","pw":""#.count)
            let file = try WorkflowCommandTests.workflowFile(
                """
                name: Secrets
                vars: { base: "\(base)", pass: "\(Self.secret)" }
                secrets: [pass]
                auth:
                  login: { url: "{{vars.base}}/login", token: $.access_token }
                  header: X-Api-Token
                  scheme: ""
                steps:
                  - id: straddle
                    url: "{{vars.base}}/anything?pad=\(pad)&pw={{vars.pass}}"
                    expect: 201
                  - id: token
                    url: "{{vars.base}}/anything?b={{vars.pass | base64}}&u={{vars.pass | base64url}}&h={{vars.pass | sha256}}"
                    captures: { token: $.headers.X-Api-Token, hex: $.headersHex.X-Api-Token, args: $.args }
                    assert: [ { $.headers.X-Api-Token: nope } ]
                  - id: captured
                    url: "{{vars.base}}/anything"
                    captures: { token: $.headers.X-Api-Token, hex: $.headersHex.X-Api-Token, all: $.headers }
                  - id: escaped
                    method: POST
                    url: "{{vars.base}}/echo"
                    headers: { Content-Type: application/json }
                    body: '{"v":"\(escaped)"}'
                    expect: 201
                  - id: long
                    method: POST
                    url: "{{vars.base}}/echo"
                    headers: { Content-Type: text/plain }
                    body: "\(String(repeating: "x", count: 2_040)){{vars.pass}}"
                """)
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
            let output = try await OrchestraExecutable.run([
                "run", file, "-v", "--output", "json", "--report-junit",
                folder.appendingPathComponent("junit.xml").path,
                "--report-html", folder.appendingPathComponent("report.html").path, "--trace",
                folder.appendingPathComponent("trace").path,
            ])
            #expect(output.status == 1, "\(output)")
            let texts = try Self.everything(output, folder: folder)
            #expect(texts.count >= 6, "stdout, stderr, JUnit, HTML and the trace's files: \(texts.map(\.0))")
            // The run did show what it masked.
            #expect(output.stderr.contains("< X-Api-Token: ***") || output.stderr.contains("> X-Api-Token: ***"))
            #expect(output.stderr.contains(#""access_token":"***""#), "\(output)")
            let token = "token-1"
            let leaks = Self.forms(of: Self.secret) + Self.forms(of: token) + [Self.secret.sha256Hex]
            for (name, text) in texts {
                for leak in leaks where text.contains(leak) {
                    Issue.record("\(name) holds '\(leak)':\n\(text)")
                }
            }
        }
    }
}
