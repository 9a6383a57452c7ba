import Foundation
import NetworkTestSupport
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// Issue 35 as the command shows it: a private CA, a client certificate, proxies from the
/// environment and from flags, secrets of a proxy, bodies saved and limited.
@Suite("orchestra run: TLS, proxies and bodies", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct NetworkCommandTests {
    static let transports = ["asynchttpclient", "urlsession"]

    /// A workflow of one GET of `url`, in its own folder, with `extra` at its top.
    static func file(_ url: String, extra: String = "", step: String = "") throws -> String {
        try WorkflowCommandTests.workflowFile(
            """
            \(extra)
            steps:
              - id: hello
                url: "\(url)"
            \(step)
            """)
    }

    @Test(arguments: transports)
    func aPrivateCAIsRefusedThenTrustedOrNotVerified(_ transport: String) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates) { base in
            let file = try Self.file(base + "/")
            let refused = try await OrchestraExecutable.run(["run", file, "--transport", transport])
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stdout.contains("certificate not trusted"), "\(refused)")
            #expect(refused.stdout.contains("(use --cacert or --insecure)"), "\(refused)")

            let trusted = try await OrchestraExecutable.run([
                "run", file, "--transport", transport, "--cacert", certificates.ca.path,
            ])
            #expect(trusted.status == 0, "\(trusted)")

            let insecure = try await OrchestraExecutable.run(["run", file, "--transport", transport, "-k"])
            #expect(insecure.status == 0, "\(insecure)")
            #expect(insecure.stderr.components(separatedBy: "are not verified").count == 2, "\(insecure)")

            // The file's tls: block, its path relative to the file.
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
            try FileManager.default.copyItem(at: certificates.ca, to: folder.appendingPathComponent("ca.pem"))
            let withBlock = try Self.file(base + "/", extra: "tls: { cacert: ca.pem }")
            try FileManager.default.copyItem(
                at: certificates.ca,
                to: URL(fileURLWithPath: withBlock).deletingLastPathComponent().appendingPathComponent("ca.pem"))
            let fromFile = try await OrchestraExecutable.run(["run", withBlock, "--transport", transport])
            #expect(fromFile.status == 0, "\(fromFile)")
        }
    }

    @Test(arguments: transports)
    func aClientCertificateFromFlagsOrTheFile(_ transport: String) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates, requiringClientCertificate: true) { base in
            let file = try Self.file(base + "/")
            let without = try await OrchestraExecutable.run([
                "run", file, "--transport", transport, "--cacert", certificates.ca.path,
            ])
            #expect(without.status == 1, "\(without)")
            let with = try await OrchestraExecutable.run([
                "run", file, "--transport", transport, "--cacert", certificates.ca.path, "--cert",
                certificates.clientCertificate.path, "--key", certificates.clientKey.path,
            ])
            #expect(with.status == 0, "\(with)")
            let block = try Self.file(
                base + "/",
                extra:
                    "tls: { cacert: \(certificates.ca.path), cert: \(certificates.clientCertificate.path), key: \(certificates.clientKey.path) }"
            )
            let fromFile = try await OrchestraExecutable.run(["run", block, "--transport", transport])
            #expect(fromFile.status == 0, "\(fromFile)")
        }
    }

    /// Before issue 35 the default transport (AsyncHTTPClient) ignored https_proxy.
    @Test(arguments: transports)
    func httpsProxyFromTheEnvironmentAndTheFlagsThatOverrideIt(_ transport: String) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates) { base in
            try await TestForwardProxy.with { proxy in
                let file = try Self.file(base + "/")
                let arguments = ["run", file, "--transport", transport, "--cacert", certificates.ca.path]
                let through = try await OrchestraExecutable.run(
                    arguments, environment: ["https_proxy": proxy.url, "NO_PROXY": ""])
                #expect(through.status == 0, "\(through)")
                #expect(proxy.requests.map(\.method) == ["CONNECT"])

                let none = try await OrchestraExecutable.run(
                    arguments + ["--proxy", ""], environment: ["https_proxy": proxy.url, "NO_PROXY": ""])
                #expect(none.status == 0, "\(none)")
                let bypassed = try await OrchestraExecutable.run(
                    arguments + ["--noproxy", "localhost"], environment: ["https_proxy": proxy.url])
                #expect(bypassed.status == 0, "\(bypassed)")
                #expect(proxy.requests.count == 1)

                let flag = try await OrchestraExecutable.run(arguments + ["--proxy", proxy.url])
                #expect(flag.status == 0, "\(flag)")
                #expect(proxy.requests.count == 2)
            }
        }
    }

    @Test func aProxyPasswordIsRedactedInEverythingTheRunShows() async throws {
        let reply: RawHTTPServer.Handler = { request in
            .response(status: 200, body: "you sent \(request.header("Proxy-Authorization") ?? "nothing"); pw=s3cretpw")
        }
        try await withRawHTTPServer(reply) { server in
            try await TestForwardProxy.with(credentials: "alice:s3cretpw") { proxy in
                let file = try Self.file(
                    server.url("/echo"), step: "    assert: [ body: { contains: \"nothing-here\" } ]")
                for transport in Self.transports {
                    let output = try await OrchestraExecutable.run([
                        "run", file, "--transport", transport, "--proxy", proxy.url, "-v", "--output", "json",
                    ])
                    #expect(output.status == 1, "\(output)")
                    #expect(output.stdout.contains("pw=***"), "\(output)")
                    #expect(!(output.stdout + output.stderr).contains("s3cretpw"), "\(transport): \(output)")
                }
            }
        }
    }

    @Test(arguments: [
        (["--proxy", "socks4://p"], "orchestra run: error: --proxy: the proxy socks4://p uses socks4://"),
        (["--cert", "/nonexistent.pem"], "orchestra run: error: --cert needs --key"),
        (
            ["--cacert", "/nonexistent-ca.pem"],
            "orchestra run: error: the certificate file /nonexistent-ca.pem: no such file"
        ),
        (["--max-body", "lots"], "--max-body"),
    ])
    func aSettingThatCannotBeUsedStopsTheRunBeforeAnyRequest(_ flags: [String], _ message: String) async throws {
        let reply: RawHTTPServer.Handler = { _ in .response(status: 200, body: "ok") }
        try await withRawHTTPServer(reply) { server in
            let file = try Self.file(server.url("/"))
            let output = try await OrchestraExecutable.run(["run", file] + flags)
            #expect(output.status != 0 && output.status != 1, "\(output)")
            #expect(output.stderr.contains(message), "\(output)")
            #expect(server.requests.isEmpty)
        }
    }

    @Test func aBadProxyVariableIsNamed() async throws {
        let file = try Self.file("https://localhost:1/")
        let output = try await OrchestraExecutable.run(["run", file], environment: ["https_proxy": "socks4://p"])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("https_proxy: the proxy socks4://p uses socks4://"), "\(output)")
    }

    @Test func validateChecksTheTLSBlock() async throws {
        let file = try Self.file("https://localhost:1/", extra: "tls: { cert: missing.pem, verify: true }")
        let output = try await OrchestraExecutable.run(["validate", file])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("no such file 'missing.pem'"), "\(output)")
        #expect(output.stderr.contains("unknown field 'verify'"), "\(output)")
        #expect(output.stderr.contains("'cert' needs 'key'"), "\(output)")
    }

    @Test func saveToAndMaxBodyFromTheCommand() async throws {
        try await withDemoServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "orchestra-out-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let base = server.baseURL.absoluteString
            let file = try Self.file(
                base + "/bytes/2000",
                step: """
                        save_to: \(folder.path)/out/bytes.bin
                      - id: read
                        url: "\(base)/bytes/2000"
                        assert: [ body: { exists: true } ]
                    """)
            let output = try await OrchestraExecutable.run(["run", file, "--max-body", "1KB", "--output", "json"])
            #expect(output.status == 1, "\(output)")
            #expect(output.stdout.contains("\"sha256\""), "\(output)")
            #expect(output.stdout.contains("larger than 1024 bytes"), "\(output)")
            let saved = try Data(contentsOf: folder.appendingPathComponent("out/bytes.bin"))
            #expect(saved.count == 2000)
        }
    }
}
