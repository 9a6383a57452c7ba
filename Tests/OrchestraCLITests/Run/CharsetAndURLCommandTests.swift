import Foundation
import HTTPTypes
import OrchestraDemoServer
import OrchestraHTTP
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

@testable import OrchestraCLI

/// Issue 35 as the command shows it: bodies decoded by their charset in `-v` and in the run,
/// and hosts from templates checked by `validate`.
@Suite("orchestra: charsets and URL templates", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct CharsetAndURLCommandTests {
    @Test func verboseShowsATextBodyDecodedByItsCharset() {
        let log = VerboseLog(redactor: Redactor(secrets: []), console: .standardError)
        var exchange = HTTPExchange(
            label: "text", request: HTTPRequest(method: .get, scheme: "http", authority: "x.test", path: "/"),
            body: nil,
            duration: .milliseconds(1))
        exchange.response = HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain; charset=ISO-8859-1"])
        exchange.responseBody = Data([0x63, 0x61, 0x66, 0xE9])
        #expect(
            log.text(of: exchange).hasSuffix("< 200 OK\n< Content-Type: text/plain; charset=ISO-8859-1\n<\n< café\n\n"))

        // UTF-16 with its byte order mark and no content type: text, not "[10 B]".
        exchange.response = HTTPResponse(status: .ok)
        exchange.responseBody = Data([0xFF, 0xFE, 0x63, 0x00, 0x61, 0x00, 0x66, 0x00, 0xE9, 0x00])
        #expect(log.text(of: exchange).hasSuffix("< 200 OK\n<\n< café\n\n"))

        // A charset not decoded: as UTF-8, and said.
        exchange.response = HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain; charset=koi8-r"])
        exchange.responseBody = Data("ok".utf8)
        #expect(
            log.text(of: exchange).hasSuffix(
                "< ok\n< [charset 'koi8-r' is not one Orchestra decodes: read as UTF-8]\n\n"))

        // 1,500 bytes of Latin-1 'é' are 3,000 bytes of text: cut at 2 KB, and said.
        exchange.response = HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain; charset=latin1"])
        exchange.responseBody = Data(repeating: 0xE9, count: 1_500)
        let long = log.text(of: exchange)
        #expect(
            long.contains("< " + String(repeating: "é", count: 1_024) + "\n< … (\(Format.bytes(1_500)) in all)\n"),
            "\(long)")
    }

    @Test func aLatin1BodyIsCapturedAndAssertedOnBothTransports() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - id: text
                    url: "{{vars.base}}/charset/latin1"
                    captures: { word: { regex: "(caf.)" } }
                    assert: [ { body: { contains: "café" } } ]
                """)
            for transport in ["asynchttpclient", "urlsession"] {
                let output = try await OrchestraExecutable.run([
                    "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--transport", transport,
                    "--no-color",
                ])
                #expect(output.status == 0, "\(transport): \(output)")
                #expect(output.stdout.contains("captured word"), "\(transport): \(output)")
            }
        }
    }

    /// An IPv6 address, written or from a variable in the host, on both transports (issue 35:
    /// URLSession on Linux refused it).
    @Test(.enabled(if: IPv6Loopback.isAvailable, "this machine cannot listen on ::1 (no IPv6 loopback)"))
    func anIPv6AddressIsReachedOnBothTransports() async throws {
        try await withDemoServer(configuration: .init(host: "::1")) { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: written, url: "http://[::1]:\(server.port)/echo/a" }
                  - { id: variable, url: "http://{{vars.host}}/echo/b" }
                """)
            for transport in ["asynchttpclient", "urlsession"] {
                let output = try await OrchestraExecutable.run([
                    "run", file, "--var", "host=\(server.authority)", "--transport", transport, "--no-color",
                ])
                #expect(output.status == 0, "\(transport): \(output)")
                #expect(
                    output.stdout.contains("GET http://[::1]:\(server.port)/echo/b → 200"), "\(transport): \(output)")
            }
            #expect(server.arrivals(of: "/echo/a") == 2 && server.arrivals(of: "/echo/b") == 2)
        }
    }

    @Test func validateReportsAHostFromAVariableThatIsNotAHost() async throws {
        let file = try WorkflowCommandTests.workflowFile(
            """
            vars: { host: "127.0.0.1:23452" }
            steps:
              - { id: a, url: "http://{{vars.host}}/x" }
              - { id: b, url: "http://127.0.0.1%3A23452/x" }
            """)
        let ok = try await OrchestraExecutable.run(["validate", file, "--var", "host=127.0.0.1:23452"])
        #expect(ok.status == 2, "step b's literal host: \(ok)")
        #expect(
            ok.stderr.contains(
                "step 'b', field 'url': 'http://127.0.0.1%3A23452/x' has the host '127.0.0.1%3A23452', which would not resolve as written"
            ), "\(ok)")
        #expect(!ok.stderr.contains("step 'a'"), "\(ok)")

        let bad = try await OrchestraExecutable.run(["validate", file, "--var", "host=127.0.0.1:99999"])
        #expect(bad.status == 2, "\(bad)")
        #expect(
            bad.stderr.contains(
                "step 'a', field 'url': 'http://{{vars.host}}/x': {{vars.host}}: goes into the URL's host, and '127.0.0.1:99999' is not a host: a port is 1 to 65535"
            ), "\(bad)")
    }
}

/// Whether this machine can listen on `::1` (a CI container may have no IPv6 loopback).
enum IPv6Loopback {
    static let isAvailable: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()
}
