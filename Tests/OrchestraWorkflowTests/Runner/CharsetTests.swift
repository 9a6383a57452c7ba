import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// Bodies are read as text by the `charset` of their `Content-Type` in every place that reads
/// them as text (issue 35: `text/plain; charset=ISO-8859-1` "café" became `caf�` in captures
/// and assertions).
@Suite("WorkflowRunner: bodies decoded by their charset", .timeLimit(.minutes(1)), .takesTurns)
struct CharsetTests {
    /// The demo server's `/charset/{name}` routes: a `regex:` capture and a `body` assertion
    /// see the text as it was written, whatever the charset (JSON read as UTF-8 although its
    /// header says Latin-1).
    @Test(arguments: [
        ("latin1", "café naïve"), ("windows-1252", "“café” – 5 €"), ("utf-16", "café ☕ 😀"), ("utf-16be", "café"),
        ("json-latin1", #"{"name":"café"}"#),
    ])
    func aRegexCaptureAndABodyAssertionReadTheTextAsWritten(_ route: String, _ text: String) async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: text
                    url: "{{vars.base}}/charset/\(route)"
                    captures: { word: { regex: "(caf.)" } }
                    assert:
                      - body: { contains: "café" }
                      - body: "\(text.replacingOccurrences(of: "\"", with: "\\\""))"
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report.allSucceeded, "\(report)")
            #expect(report["text"]?.captures.first?.value == .string("café"))
        }
    }

    /// A charset that is not decoded is read as UTF-8, and the failure says so.
    @Test func anUnknownCharsetIsReadAsUTF8AndSaidWhereItMatters() async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: text
                    url: "{{vars.base}}/charset/koi8-r"
                    assert: [ { body: { contains: "привет" } } ]
                  - id: status
                    url: "{{vars.base}}/charset/koi8-r"
                    expect: 201
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            let failed = try #require(report["text"]?.assertions.first)
            #expect(!failed.passed)
            #expect(
                failed.description
                    == "body contains \"привет\": got \"\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\" (charset 'koi8-r' is not one Orchestra decodes: read as UTF-8)"
            )
            #expect(
                report["status"]?.error
                    == "expected 201, got 200: \u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD} (charset 'koi8-r' is not one Orchestra decodes: read as UTF-8)"
            )
        }
    }

    /// A body quoted in a message is decoded too: `got 404: café`, not `caf�`, nor a
    /// "(5 bytes of text/plain)" for bytes that are not UTF-8.
    @Test func aMessageQuotesTheBodyDecoded() async throws {
        let transport = ScriptedHTTPTransport { _, _ in
            (
                HTTPResponse(status: .notFound, headerFields: [.contentType: "text/plain; charset=ISO-8859-1"]),
                Data([0x6E, 0x6F, 0x20, 0x63, 0x61, 0x66, 0xE9])
            )
        }
        let workflow = try parse("steps:\n  - { id: a, url: \"http://x.test/a\" }")
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["a"]?.error == "expected 2xx, got 404: no café")
    }

    /// The auth block's `body_contains` reads the body decoded: a Latin-1 refusal is seen.
    @Test func anAuthFailureRuleReadsTheBodyDecoded() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/login": return respond(200, #"{"access_token":"t"}"#)
            default:
                return (
                    HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain; charset=latin1"]),
                    Data("jeton expiré".unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
                )
            }
        }
        let workflow = try parse(
            """
            auth:
              login: { url: "http://x.test/login", token: $.access_token }
              failure: { body_contains: "expiré" }
            steps:
              - { id: records, url: "http://x.test/data" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let error = report["records"]?.error ?? ""
        #expect(error.contains("still refused the token"), "\(error)")
        #expect(error.hasSuffix(": jeton expiré"), "\(error)")
        #expect(report.logins + report.refreshes >= 2, "the refusal was seen, and the token fetched again")
    }
}
