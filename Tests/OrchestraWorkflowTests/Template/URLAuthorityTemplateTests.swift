import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// A template in a URL's host or port is host text, checked as a host, not percent-encoded
/// (issue 35: `http://{{vars.host}}/x` with `127.0.0.1:23452` was sent to `127.0.0.1%3A23452`,
/// and `validate` said the file was fine).
@Suite("URL templates in the host and port", .timeLimit(.minutes(1)), .takesTurns)
struct URLAuthorityTemplateTests {
    static func render(_ url: String, _ variables: [String: String]) throws -> String {
        try Template(parsing: url).render(for: .url, with: TemplateValues(variables: variables))
    }

    @Test(arguments: [
        ("http://{{vars.host}}/x", ["host": "127.0.0.1:23452"], "http://127.0.0.1:23452/x"),
        ("http://{{vars.host}}", ["host": "api.example.com"], "http://api.example.com"),
        ("http://{{vars.host}}:{{vars.port}}/x", ["host": "localhost", "port": "8080"], "http://localhost:8080/x"),
        ("http://127.0.0.1:{{vars.port}}?q", ["port": "65535"], "http://127.0.0.1:65535?q"),
        ("http://{{vars.host}}/x", ["host": "[::1]:8080"], "http://[::1]:8080/x"),
        ("http://{{vars.host}}:1/x", ["host": "[fe80::1:2]"], "http://[fe80::1:2]:1/x"),
        ("https://{{vars.sub}}.example.com/", ["sub": "api-2"], "https://api-2.example.com/"),
        ("{{vars.scheme}}://{{vars.host}}/x", ["scheme": "https", "host": "x.test:8443"], "https://x.test:8443/x"),
        ("http://u:p@{{vars.host}}/x", ["host": "x.test:81"], "http://u:p@x.test:81/x"),
        // Before the '@': the user information, percent-encoded as before.
        ("http://{{vars.user}}:{{vars.pw}}@x.test/", ["user": "a b", "pw": "p:@/"], "http://a%20b:p%3A%40%2F@x.test/"),
        // Past the authority: percent-encoded as before.
        (
            "http://x.test/{{vars.host}}?h={{vars.host}}#{{vars.host}}", ["host": "a:b"],
            "http://x.test/a%3Ab?h=a%3Ab#a%3Ab"
        ),
        // `| raw` is as is anywhere, unchecked.
        ("http://{{vars.h | raw}}", ["h": "a.test/b?c"], "http://a.test/b?c"),
        // A template that starts the URL is a base, as before.
        ("{{vars.base}}/x", ["base": "http://127.0.0.1:1"], "http://127.0.0.1:1/x"),
    ])
    func aValueInTheHostIsHostText(_ url: String, _ variables: [String: String], _ sent: String) throws {
        #expect(try Self.render(url, variables) == sent)
    }

    @Test(arguments: [
        ("http://{{vars.host}}/x", "127.0.0.1/evil", "a host cannot contain '/'"),
        ("http://{{vars.host}}/x", "evil.test?", "a host cannot contain '?'"),
        ("http://{{vars.host}}/x", "evil.test#", "a host cannot contain '#'"),
        ("http://{{vars.host}}/x", "user@evil.test", "a host cannot contain '@'"),
        ("http://{{vars.host}}/x", "a%2Fb", "a host cannot contain '%'"),
        ("http://{{vars.host}}/x", "a b", "a host cannot contain white space or a control character"),
        ("http://{{vars.host}}/x", "::1", "an IPv6 address goes in brackets: [::1]"),
        ("http://{{vars.host}}/x", "[::1", "'[' without ']'"),
        ("http://{{vars.host}}/x", "[::g]", "an IPv6 address in brackets is hexadecimal digits, ':' and '.'"),
        ("http://{{vars.host}}/x", "x.test:0", "a port is 1 to 65535"),
        ("http://{{vars.host}}/x", "x.test:65536", "a port is 1 to 65535"),
        ("http://{{vars.host}}/x", "x.test:http", "a port is digits"),
        ("http://x.test:{{vars.host}}/x", "80/evil", "a port is digits"),
    ])
    func aValueThatIsNotAHostFailsNamingTheTemplateAndTheValue(_ url: String, _ value: String, _ why: String) {
        #expect {
            try Self.render(url, ["host": value])
        } throws: { error in
            "\(error)" == "{{vars.host}}: goes into the URL's host, and '\(value)' is not a host: \(why)"
        }
    }

    @Test func aLongValueIsQuotedShort() {
        let value = String(repeating: "a", count: 100_000) + "/"
        #expect {
            try Self.render("http://{{vars.host}}/x", ["host": value])
        } throws: { error in
            "\(error)"
                == "{{vars.host}}: goes into the URL's host, and '\(String(repeating: "a", count: 200))… (100001 characters)' is not a host: a host cannot contain '/'"
        }
    }

    /// Against the demo server: the host and port from one variable reach it (before, the
    /// host `127.0.0.1%3APORT` did not resolve); a host from a capture that is not one fails
    /// the step, unsent.
    @Test func aHostAndPortFromAVariableReachTheServer() async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { host: "\(server.authority)" }
                steps:
                  - id: direct
                    url: "http://{{vars.host}}/echo/ok"
                    captures: { evil: { header: Content-Type } }
                  - id: captured
                    url: "http://{{direct.evil}}/echo/no"
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report["direct"]?.state == .succeeded, "\(report)")
            #expect(report["direct"]?.url == "http://\(server.authority)/echo/ok")
            let captured = try #require(report["captured"])
            #expect(captured.state == .failed)
            #expect(
                captured.error?.hasPrefix("{{direct.evil}}: goes into the URL's host, and 'text/plain") == true,
                "\(captured.error ?? "")")
            #expect(captured.error?.hasSuffix("is not a host: a host cannot contain '/'") == true)
            #expect(server.arrivals(of: "/echo/no") == 0)
        }
    }

    @Test func validateReportsAHostThatWouldNotResolveAsWritten() {
        let fromVariable = errors(
            """
            vars: { host: "127.0.0.1/x" }
            steps:
              - { id: a, url: "http://{{vars.host}}/x" }
            """)
        #expect(
            fromVariable.map(\.message) == [
                "'http://{{vars.host}}/x': {{vars.host}}: goes into the URL's host, and '127.0.0.1/x' is not a host: a host cannot contain '/'"
            ])
        let written = errors("steps:\n  - { id: a, url: \"http://127.0.0.1%3A8080/x\" }")
        #expect(
            written.map(\.message) == [
                "'http://127.0.0.1%3A8080/x' has the host '127.0.0.1%3A8080', which would not resolve as written: a host is letters, digits, '-', '_' and '.', or an IP address (an IPv6 one in brackets)"
            ])
        #expect(errors("steps:\n  - { id: a, url: \"http://my_service:8080/x\" }").isEmpty)
        #expect(errors("steps:\n  - { id: a, url: \"http://[::1]:8080/x\" }").isEmpty)
        #expect(
            errors(
                """
                vars: { host: "127.0.0.1:23452" }
                steps:
                  - { id: a, url: "http://{{vars.host}}/x" }
                """
            ).isEmpty)
    }
}
