import Foundation
import HTTPTypes
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// A URL's user information (`http://user:password@host/`): sent as basic auth, never shown.
@Suite("URL user information", .timeLimit(.minutes(1)), .takesTurns)
struct URLCredentialsTests {
    static let password = "Pw-s3cret-9"

    func run(_ text: String, status: Int = 200) async throws -> (WorkflowReport, ScriptedHTTPTransport) {
        let workflow = try Workflow.parse(text, file: "flow.yaml")
        let transport = ScriptedHTTPTransport { request, _ in
            // An echo of what was sent, as httpbin's /anything does.
            let echo = "\(request.path ?? "") \(request.headerFields[.authorization] ?? "")"
            if request.path == "/base" { return respond(200, #"{"base":"http://ada:\#(Self.password)@x.test"}"#) }
            return respond(request.path == "/fails" ? status : 200, #"{"echo":"\#(echo)"}"#)
        }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        return (report, transport)
    }

    /// `Basic base64(text)`.
    static func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var step: String
        var top = ""
        var authorization: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "user and password", step: #"url: "http://ada:\#(password)@x.test/a""#,
            authorization: basic("ada:\(password)")),
        Case(
            name: "percent-decoded", step: #"url: "http://us%40er:p%3A\#(password)@x.test/a""#,
            authorization: basic("us@er:p:\(password)")),
        Case(name: "a user alone", step: #"url: "http://\#(password)@x.test/a""#, authorization: basic("\(password):")),
        Case(
            name: "an Authorization header wins",
            step: #"url: "http://ada:\#(password)@x.test/a", headers: { Authorization: "Bearer t" }"#,
            authorization: "Bearer t"),
        Case(
            name: "the step's basic_auth wins",
            step: #"url: "http://ada:\#(password)@x.test/a", basic_auth: { user: bo, password: pw }"#,
            authorization: basic("bo:pw")),
        Case(
            name: "it wins over the workflow's basic_auth", step: #"url: "http://ada:\#(password)@x.test/a""#,
            top: "basic_auth: { user: bo, password: pw }\n", authorization: basic("ada:\(password)")),
        Case(
            name: "from a variable", step: #"url: "http://ada:{{vars.pw}}@x.test/a""#,
            top: "vars: { pw: \"\(password)\" }\n", authorization: basic("ada:\(password)")),
    ]

    @Test(arguments: cases)
    func sentAsBasicAuthNotInTheRequestAndNeverShown(_ test: Case) async throws {
        let (report, transport) = try await run(
            test.top + "steps:\n  - { id: a, \(test.step) }\n  - { id: b, needs: [a], url: \"http://x.test/fails\" }\n",
            status: 500)
        let request = try #require(transport.requests.first { $0.path == "/a" })
        #expect(request.authority == "x.test")
        #expect(request.headerFields[.authorization] == test.authorization)
        #expect(report["a"]?.state == .succeeded)
        #expect(report["a"]?.url == "http://***@x.test/a")
        let shown =
            try String(decoding: JSONEncoder().encode(report.steps.map(\.url)), as: UTF8.self)
            + report.steps.compactMap(\.error).joined()
        #expect(!shown.contains(Self.password), "\(shown)")
    }

    @Test func aURLWithUserInformationFromACaptureIsSentTheSameWay() async throws {
        let (report, transport) = try await run(
            """
            steps:
              - { id: site, url: "http://x.test/base", captures: { base: $.base } }
              - { id: a, url: "{{site.base}}/a", expect: [201] }
            """)
        let request = try #require(transport.requests.first { $0.path == "/a" })
        #expect(request.authority == "x.test")
        #expect(request.headerFields[.authorization] == Self.basic("ada:\(Self.password)"))
        // The step fails (200, not 201): its error quotes the echo of the credentials.
        let error = try #require(report["a"]?.error)
        #expect(report["a"]?.url == "http://***@x.test/a")
        #expect(!error.contains(Self.password) && !error.contains(Self.basic("ada:\(Self.password)")), "\(error)")
    }

    @Test func userInformationBasicAuthCannotSendFailsTheStepUnsentWithoutQuotingIt() async throws {
        let (report, transport) = try await run(
            #"steps: [{ id: a, url: "http://a%3Ab:\#(Self.password)@x.test/a" }]"#)
        #expect(transport.requests.isEmpty)
        let error = try #require(report["a"]?.error)
        #expect(error.contains("'http://***@x.test/a' has a user with ':'"), "\(error)")
        #expect(!error.contains(Self.password))
    }

    @Test func stepsThatNeverRanAndForEachStepsShowTheirURLMasked() async throws {
        let (report, _) = try await run(
            """
            failure: stop
            steps:
              - { id: a, url: "http://x.test/fails", captures: { list: $.list } }
              - id: each
                for_each: "{{a.list}}"
                url: "http://ada:\(Self.password)@x.test/{{item}}"
            """, status: 500)
        #expect(report["each"]?.state == .skipped)
        #expect(report["each"]?.url == "http://***@x.test/{{item}}")
        // How a for_each step's report shows its URL: the variables filled in.
        let fanOut = try Template(parsing: "{{vars.base}}/{{item}}")
        #expect(
            fanOut.substitutingVariables(["base": "http://ada:\(Self.password)@x.test"], for: .url)
                == "http://***@x.test/{{item}}")
    }

    @Test func validateAcceptsUserInformationAndNeverQuotesIt() throws {
        _ = try parse(#"steps: [{ id: a, url: "http://ada:\#(Self.password)@x.test/a" }]"#)
        let messages = errors(#"steps: [{ id: a, url: "ftp://ada:\#(Self.password)@x.test/a" }]"#)
            .map(\.description)
        #expect(messages.contains { $0.contains("'ftp://***@x.test/a' has the scheme 'ftp'") }, "\(messages)")
        #expect(!messages.joined().contains(Self.password))
    }

    @Test(arguments: [
        ("http://ada:pw@x.test/a", "http://***@x.test/a"),
        ("GET https://a@b@x.test:8/p?q=http://c:d@y.test", "GET https://***@x.test:8/p?q=http://***@y.test"),
        ("{{vars.base}}/a@b", "{{vars.base}}/a@b"),
        ("http://{{vars.u}}:{{vars.p}}@x.test/", "http://***@x.test/"),
        ("mail me: ada@x.test", "mail me: ada@x.test"),
        ("\"http://u:p@h\" and 'http://v:w@k'", "\"http://***@h\" and 'http://***@k'"),
    ])
    func maskingUserInformation(text: String, shown: String) {
        #expect(URLCheck.maskingUserInfo(text) == shown)
    }
}
