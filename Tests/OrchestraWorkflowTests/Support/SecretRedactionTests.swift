import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// Secrets are masked in every form, before any cut, including the secrets a run learns (the
/// auth block's tokens, the filters' output of a secret).
@Suite("Secrets: every form, masked before the cut, learned during the run", .timeLimit(.minutes(1)), .takesTurns)
struct SecretRedactionTests {
    /// A slash, a space and a non-ASCII letter: each has forms of its own.
    static let secret = "Sekr1t-Plain/Pass ü"

    static func unicodeEscaped(_ text: String, format: String = "\\u%04x") -> String {
        text.unicodeScalars.map { String(format: format, $0.value) }.joined()
    }

    static func hex(_ text: String, format: String = "%02x") -> String {
        text.utf8.map { String(format: format, $0) }.joined()
    }

    /// Each way a request, a filter or a server writes the secret.
    static let forms: [(name: String, text: String)] = [
        ("as it is", secret),
        ("percent-encoded (a URL)", Template.percentEncoded(secret)),
        ("percent-encoded, lowercase hex", "Sekr1t-Plain%2fPass%20%c3%bc"),
        ("every character percent-encoded", secret.utf8.map { String(format: "%%%02X", $0) }.joined()),
        ("form-encoded", RenderedRequest.formEncoded(secret)),
        ("JSON-escaped", String(JSONValue.string(secret).text.dropFirst().dropLast())),
        ("every character \\u-escaped", unicodeEscaped(secret)),
        ("every character \\u-escaped, uppercase hex", unicodeEscaped(secret, format: "\\u%04X")),
        ("some characters \\u-escaped", #"Sekr\u0031t-Plain\/Pass \u00FC"#),
        ("JSON in a JSON string", #"\\u0053ekr1t-Plain\\/Pass \\u00fc"#),
        ("HTML character references", "Sekr1t-Plain&#x2F;Pass&#32;&#252;"),
        ("base64", Data(secret.utf8).base64EncodedString()),
        (
            "base64url",
            Data(secret.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        ),
        ("hex", hex(secret)),
        ("hex, uppercase", hex(secret, format: "%02X")),
    ]

    @Test("every form of a secret is masked whole", arguments: forms)
    func everyForm(name: String, text: String) {
        let redactor = Redactor(secrets: [Self.secret])
        #expect(redactor.redact("before \(text) after") == "before *** after", "\(name)")
        #expect(redactor.containsSecret(in: text), "\(name)")
    }

    @Test(
        "a secret inside a longer base64 text (a Basic credential) is masked at each byte alignment", arguments: 1...3)
    func insideBase64(prefix: Int) {
        let redactor = Redactor(secrets: [Self.secret])
        let user = String(repeating: "u", count: prefix) + ":"
        for encoded in [
            Data((user + Self.secret).utf8).base64EncodedString(),
            Data((user + Self.secret + "!").utf8).base64EncodedString(),
        ] {
            let shown = redactor.redact("Basic \(encoded)")
            let parts = shown.dropFirst("Basic ".count).components(separatedBy: Redactor.mask)
            // Left: the user's characters, and at most the one that mixes its bits with the
            // secret's; right: at most the few that mix the secret's last bits with what follows.
            let userCharacters = (8 * user.utf8.count + 5) / 6
            #expect(
                parts.count == 2 && parts[0].count <= userCharacters && parts[1].count <= 4, "\(encoded) → \(shown)")
        }
    }

    /// Where the secret starts in a value quoted by a message (cut at 200 characters).
    static let straddles: [(form: String, start: Int)] = [
        (secret, 180), (secret, 190), (secret, 195), (secret, 199), (secret, 200), (secret, 0),
        (unicodeEscaped(secret), 150), (unicodeEscaped(secret), 198),
        (Data(secret.utf8).base64EncodedString(), 190),
    ]

    @Test("a secret that straddles the 200-character cut of a message is masked whole", arguments: straddles)
    func maskedBeforeTheCut(form: String, start: Int) {
        let text = String(repeating: "a", count: start) + form + String(repeating: "b", count: 300)
        let shown = Redactor.$current.withValue(Redactor(secrets: [Self.secret])) { MessageValue.shortened(text) }
        let kept = max(0, 200 - start - form.count)
        let expected =
            start < 200
            ? String(repeating: "a", count: start) + "***" + String(repeating: "b", count: kept)
            : String(repeating: "a", count: 200)
        #expect(shown == expected + "… (\(text.count) characters)")
        // A body quoted by a step's error: cut at 200 characters too.
        let snippet = Redactor.$current.withValue(Redactor(secrets: [Self.secret])) {
            StepErrors.snippet(Data(text.utf8), contentType: "application/json")
        }
        #expect(snippet == expected + "…")
    }

    @Test(
        "a file's error masks a secret before it cuts the value it quotes",
        arguments: [("ftp://x.test/", 180), ("http://x.test/", 170), ("http://x.test/", 150)])
    func fileErrors(start: String, padding: Int) {
        let url = start + String(repeating: "a", count: padding) + "{{vars.pass}} x"
        do {
            _ = try Workflow.parse(
                "vars: { pass: \"\(Self.secret)\" }\nsecrets: [pass]\nsteps:\n  - { id: a, url: \"\(url)\" }\n",
                file: "flow.yaml", environment: [:])
            Issue.record("the file was accepted")
        } catch {
            let message = error.description
            #expect(message.contains("***") && !message.contains("Sekr"), "\(message)")
        }
    }

    @Test("the start of a text, in bytes or characters, never splits a mask nor a character")
    func redactedPrefix() {
        let redactor = Redactor(secrets: ["s3cret"])
        #expect(redactor.redactedPrefix(of: "ab s3cret cd", limit: 4, in: .bytes) == ("ab ***", true))
        #expect(redactor.redactedPrefix(of: "ab s3cret", limit: 100, in: .characters) == ("ab ***", false))
        #expect(redactor.redactedPrefix(of: "éé s3cret", limit: 3, in: .bytes) == ("é", true))
        #expect(redactor.redactedPrefix(of: "abc", limit: 3, in: .characters) == ("abc", false))
        // No secret learned yet: the text is cut as it is.
        #expect(Redactor(secrets: []).redactedPrefix(of: "abcdef", limit: 2, in: .characters) == ("ab", true))
    }

    @Test("a learned secret is masked from then on, in every form; a value of a few characters is not learned")
    func learning() {
        let redactor = Redactor(secrets: [])
        #expect(redactor.isEmpty && redactor.redact("tok-12345") == "tok-12345")
        redactor.learn("tok-12345")
        redactor.learn("abc")
        #expect(redactor.redact(#"{"t":"\u0074ok-12345","b":"dG9rLTEyMzQ1"}"#) == #"{"t":"***","b":"***"}"#)
        #expect(redactor.redact("abc") == "abc")
    }

    @Test(
        "a long learned value is masked whole, learned in pieces; a redactor keeps the last values it learned",
        .ownThread)
    func learningIsBounded() {
        let redactor = Redactor(secrets: ["declared"])
        // 16 pieces: a token of 16 KB.
        let long = (0..<(16 * Redactor.learnedPieceLength / 8)).map { String(format: "%08x", $0 &* 2_654_435_761) }
            .joined()
        redactor.learn(long)
        #expect(redactor.redact("<\(long)>") == "<***>")
        // Ten times as many values as it keeps: the last ones are kept, the first forgotten.
        let values = (0..<(10 * Redactor.maximumLearnedSecrets)).map { String(format: "val-%05d", $0) }
        for value in values { redactor.learn(value) }
        #expect(redactor.redact(values.last!) == "***")
        #expect(redactor.redact(values[values.count - Redactor.maximumLearnedSecrets / 2]) == "***")
        #expect(redactor.redact(values[0]) == values[0])
        #expect(redactor.redact("<\(long)>") != "<***>", "the token's pieces were forgotten first")
        #expect(redactor.redact("a declared one") == "a *** one", "the secrets: values are never forgotten")
    }

    @Test("a login response with thousands of credentials teaches the run its token and the first 16 of them")
    func manyCredentials() async throws {
        let members = (0..<1_600).map { #""c\#($0)_token":"credential-\#($0)""# }.joined(separator: ",")
        let workflow = try Workflow.parse(
            """
            auth:
              login: { url: "http://x.test/login", token: $.access_token }
            steps:
              - { id: a, url: "http://x.test/a" }
            """, file: "flow.yaml", environment: [:])
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/login" ? respond(200, #"{"access_token":"tok-123456",\#(members)}"#) : respond(200)
        }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["a"]?.state == .succeeded)
        #expect(workflow.redactor.redact("tok-123456") == "***")
        let learned = (0..<1_600).filter { workflow.redactor.redact("credential-\($0)!") == "***!" }
        // The token's member is one of them.
        #expect(learned == Array(0..<(CredentialLearningTransport.maximumCredentials - 1)), "\(learned)")
    }

    @Test("the credentials of a login response are recognised by their members' names")
    func credentialNames() throws {
        let document = try JSONValue(
            parsing: Data(
                #"{"access_token":"a1","token_type":"Bearer","data":{"refreshToken":"r1","client_secret":"c1","id":7},"list":[{"id_token":"i1"}]}"#
                    .utf8))
        #expect(CredentialLearningTransport.credentials(in: document).sorted() == ["a1", "c1", "i1", "r1"])
    }

    /// A server that echoes the token (`\u`-escaped, in base64, straddling the cut of the
    /// error), a refresh token in the login response, and a filter's hash of a secret.
    @Test(
        "tokens learned mid-run and filters' outputs of secrets are masked in reports and before the observer sees them"
    )
    func learnedDuringTheRun() async throws {
        let token = "tok-AbCdEf123456"
        let refreshToken = "rt-ZyXw98765"
        let workflow = try Workflow.parse(
            """
            vars: { base: "http://x.test", pass: "\(Self.secret)" }
            secrets: [pass]
            auth:
              login: { url: "{{vars.base}}/login", token: $.access_token }
              header: X-Api-Token
              scheme: ""
            steps:
              - { id: echo, url: "{{vars.base}}/echo", expect: 201 }
              - { id: seen, url: "{{vars.base}}/seen", captures: { token: $.token } }
              - { id: hash, url: "{{vars.base}}/h/{{vars.pass | sha256}}/{{seen.token | json | base64}}" }
            """, file: "flow.yaml", environment: [:])
        let transport = ScriptedHTTPTransport { request, _ in
            let sent = request.headerFields[HTTPField.Name("X-Api-Token")!] ?? ""
            switch request.path ?? "" {
            case "/login":
                return respond(
                    200, #"{"access_token":"\#(token)","refresh_token":"\#(refreshToken)","token_type":"Bearer"}"#)
            case "/echo":
                let pad = String(repeating: "p", count: 200 - 12 - 5)
                return respond(
                    200,
                    #"{"pad":"\#(pad)","t":"\#(sent)","u":"\#(Self.unicodeEscaped(sent))","b":"\#(Data(sent.utf8).base64EncodedString())","r":"\#(refreshToken)"}"#
                )
            case "/seen":
                return respond(200, #"{"token":"\#(sent)"}"#)
            default:
                return respond(500, #"{"path":"\#(request.path ?? "")"}"#)
            }
        }
        let exchanges = Locked<[String]>([])
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(
                workflow: workflow, transport: transport,
                observer: { exchange in
                    // What --verbose prints: the redactor knows the token before the login's response is shown.
                    let body = String(decoding: exchange.responseBody ?? Data(), as: UTF8.self)
                    exchanges.withLock { $0.append(workflow.redactor.redact(body)) }
                }
            ).run(clock: ManualClock())
        }
        #expect(report["echo"]?.state == .failed && report["hash"]?.state == .failed)
        let shown = "\(report)" + exchanges.withLock { $0.joined(separator: "\n") }
        let sha = Self.secret.sha256Hex
        for leak in [
            token, String(token.prefix(7)), Self.unicodeEscaped(token), Data(token.utf8).base64EncodedString(),
            refreshToken, sha, Data(#""\#(token)""#.utf8).base64EncodedString(),
        ] {
            #expect(!shown.contains(leak), "\(leak) in \(shown)")
        }
        #expect(report["echo"]?.error?.hasPrefix(#"expected 201, got 200: {"pad":"ppp"#) == true)
        #expect(report["hash"]?.url == "http://x.test/h/***/***")
        #expect(exchanges.withLock { $0 }.contains { $0.contains(#""access_token":"***""#) })
    }
}
