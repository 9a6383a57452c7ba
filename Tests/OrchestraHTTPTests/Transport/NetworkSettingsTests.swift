import Foundation
import HTTPTypes
import NetworkTestSupport
import Orchestra
import OrchestraAsyncHTTPClient
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// Which transport a test sends through, with the settings it is given.
enum TransportUnderTest: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case asyncHTTPClient, urlSession

    var testDescription: String { rawValue }

    func with<T: Sendable>(
        _ settings: HTTPClientSettings, maximumBodySize: Int = 64 << 20,
        _ body: (any HTTPTransport) async throws -> T
    ) async throws -> T {
        switch self {
        case .asyncHTTPClient:
            try await AsyncHTTPClientTransport.withTransport(maximumBodySize: maximumBodySize, settings: settings) {
                try await body($0)
            }
        case .urlSession:
            try await body(URLSessionTransport(maximumBodySize: maximumBodySize, settings: settings))
        }
    }
}

/// Issue 35: TLS trust, client certificates and proxies, on both transports, against an HTTPS
/// server with certificates made at test time and a forward proxy, both local.
@Suite("Transports: TLS and proxies", .serialized, .timeLimit(.minutes(1)), .takesTurns)
struct NetworkSettingsTests {
    static func get(_ url: String, _ transport: any HTTPTransport) async throws -> (HTTPResponse, String) {
        let (response, data) = try await transport.send(HTTPRequest(method: .get, url: URL(string: url)!), body: nil)
        return (response, String(decoding: data, as: UTF8.self))
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aPrivateCAIsRefusedUntilTrusted(_ kind: TransportUnderTest) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates) { base in
            let error = await #expect(throws: HTTPTransportError.self) {
                try await kind.with(HTTPClientSettings()) { try await Self.get(base + "/", $0) }
            }
            #expect(error?.code == .tls)
            #expect(error?.message.contains("certificate not trusted") == true)
            #expect(error?.message.contains("(use --cacert or --insecure)") == true)

            var trusted = HTTPClientSettings()
            trusted.tls.trustedCertificates = certificates.ca
            let (response, text) = try await kind.with(trusted) { try await Self.get(base + "/", $0) }
            #expect(response.status == .ok)
            #expect(text == "hello over TLS")

            var insecure = HTTPClientSettings()
            insecure.tls.verifiesCertificates = false
            let (again, _) = try await kind.with(insecure) { try await Self.get(base + "/", $0) }
            #expect(again.status == .ok)
        }
    }

    /// OpenSSL's SSL_CERT_FILE replaces the system's roots: the test CA alone is then trusted.
    @Test(arguments: TransportUnderTest.allCases)
    func sslCertFileReplacesTheSystemRoots(_ kind: TransportUnderTest) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates) { base in
            let settings = try HTTPClientSettings.environment(["SSL_CERT_FILE": certificates.ca.path])
            #expect(settings.tls.systemRoots?.path == certificates.ca.path)
            let (response, _) = try await kind.with(settings) { try await Self.get(base + "/", $0) }
            #expect(response.status == .ok)
        }
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aClientCertificateIsPresentedToAServerThatWantsOne(_ kind: TransportUnderTest) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates, requiringClientCertificate: true) { base in
            var settings = HTTPClientSettings()
            settings.tls.trustedCertificates = certificates.ca
            await #expect(throws: HTTPTransportError.self) {
                try await kind.with(settings) { try await Self.get(base + "/", $0) }
            }
            settings.tls.clientCertificate = .init(
                certificate: certificates.clientCertificate, key: certificates.clientKey)
            let (response, text) = try await kind.with(settings) { try await Self.get(base + "/", $0) }
            #expect(response.status == .ok)
            #expect(text == "hello over TLS")
        }
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aFileThatIsNotACertificateIsNamedBeforeAnyRequest(_ kind: TransportUnderTest) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        var settings = HTTPClientSettings()
        settings.tls.trustedCertificates = certificates.notPEM
        let sent = Locked(0)
        let error = await #expect(throws: HTTPTransportError.self) {
            try await kind.with(settings) { _ in sent.withLock { $0 += 1 } }
        }
        #expect(error?.code == .tls)
        #expect(error?.message == "the certificate file \(certificates.notPEM.path): not PEM certificates")
        #expect(sent.withLock { $0 } == 0)
    }

    @Test(arguments: TransportUnderTest.allCases)
    func httpsGoesThroughTheProxyTheEnvironmentNames(_ kind: TransportUnderTest) async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        try await TLSTestServer.with(certificates) { base in
            try await TestForwardProxy.with { proxy in
                // The default transport ignored https_proxy before issue 35.
                var settings = try HTTPClientSettings.environment(["https_proxy": proxy.url])
                settings.tls.trustedCertificates = certificates.ca
                let (response, _) = try await kind.with(settings) { try await Self.get(base + "/", $0) }
                #expect(response.status == .ok)
                let authority = String(base.dropFirst("https://".count))
                #expect(proxy.requests.map(\.method) == ["CONNECT"])
                #expect(proxy.requests.map(\.target) == [authority])

                // NO_PROXY: straight to the server.
                settings.proxy.noProxy = ["localhost"]
                _ = try await kind.with(settings) { try await Self.get(base + "/", $0) }
                #expect(proxy.requests.count == 1)
            }
        }
    }

    @Test(arguments: TransportUnderTest.allCases)
    func plainHTTPGoesThroughTheProxyWithItsCredentials(_ kind: TransportUnderTest) async throws {
        let reply: RawHTTPServer.Handler = { _ in .response(status: 200, body: "direct") }
        try await withRawHTTPServer(reply) { server in
            try await TestForwardProxy.with(credentials: "alice:s3cret pass") { proxy in
                let settings = HTTPClientSettings(
                    proxy: .init(proxy: try HTTPProxy(url: "http://alice:s3cret%20pass@127.0.0.1:\(proxy.port)")))
                let (response, text) = try await kind.with(settings) { try await Self.get(server.url("/x"), $0) }
                #expect(response.status == .ok)
                #expect(text == "direct")
                #expect(proxy.requests.count == 1)
                #expect(
                    proxy.requests.first?.authorization == "Basic "
                        + Data("alice:s3cret pass".utf8).base64EncodedString())
                #expect(server.requests.map(\.target) == ["/x"])
            }
        }
    }

    @Test func aWrongProxyPasswordIsSaidInWords() async throws {
        try await TestForwardProxy.with(credentials: "alice:right") { proxy in
            let settings = HTTPClientSettings(
                proxy: .init(proxy: try HTTPProxy(url: "http://alice:wrong@127.0.0.1:\(proxy.port)")))
            let error = await #expect(throws: HTTPTransportError.self) {
                try await TransportUnderTest.asyncHTTPClient.with(settings) {
                    try await Self.get("https://localhost:1/", $0)
                }
            }
            #expect(error?.message.contains("407 Proxy Authentication Required") == true)
            #expect(error?.message.contains("wrong") == false)
        }
    }
}

/// The rules curl follows to pick a proxy, which both transports now share.
@Suite("Proxy settings", .takesTurns)
struct ProxySettingsTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var environment: [String: String]
        var url: String
        var expected: String?
        var testDescription: String { "\(environment) \(url)" }
    }

    static let cases: [Case] = [
        Case(environment: ["http_proxy": "p:3128"], url: "http://a.test/", expected: "http://p:3128"),
        // Upper-case HTTP_PROXY is not read (a CGI request's Proxy: header can set it).
        Case(environment: ["HTTP_PROXY": "p:3128"], url: "http://a.test/", expected: nil),
        Case(environment: ["http_proxy": "p:3128"], url: "https://a.test/", expected: nil),
        Case(environment: ["HTTPS_PROXY": "p:3128"], url: "https://a.test/", expected: "http://p:3128"),
        Case(
            environment: ["https_proxy": "s:1", "HTTPS_PROXY": "p:2"], url: "https://a.test/", expected: "http://s:1"),
        Case(environment: ["ALL_PROXY": "socks5://s"], url: "https://a.test/", expected: "socks5://s:1080"),
        Case(environment: ["all_proxy": "p", "http_proxy": "h:8"], url: "http://a.test/", expected: "http://h:8"),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "*"], url: "http://a.test/", expected: nil),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "test"], url: "http://a.test/", expected: nil),
        Case(environment: ["http_proxy": "p", "no_proxy": ".test"], url: "http://a.test/", expected: nil),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "est"], url: "http://a.test/", expected: "http://p:1080"),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "a.test:8080"], url: "http://a.test/", expected: nil),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "10.0.0.0/8"], url: "http://10.2.3.4/", expected: nil),
        Case(
            environment: ["http_proxy": "p", "NO_PROXY": "10.0.0.0/8"], url: "http://11.2.3.4/",
            expected: "http://p:1080"),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "::1"], url: "http://[::1]:80/", expected: nil),
        Case(environment: ["http_proxy": "p", "NO_PROXY": "fd00::/8"], url: "http://[fd12::1]/", expected: nil),
        Case(environment: ["https_proxy": "https://p"], url: "https://a.test/", expected: "https://p:443"),
    ]

    @Test(arguments: cases)
    func theProxyOfAURL(_ test: Case) throws {
        let settings = try HTTPProxySettings.environment(test.environment)
        let url = try #require(URL(string: test.url))
        let proxy = settings.proxy(scheme: url.scheme!, host: url.host!)
        #expect(proxy?.description == test.expected)
    }

    @Test func credentialsAreDecodedAndNeverShown() throws {
        let proxy = try HTTPProxy(url: "http://al%40ce:p%3Ass@proxy.corp:3128")
        #expect(proxy.credentials?.user == "al@ce")
        #expect(proxy.credentials?.password == "p:ss")
        #expect(proxy.description == "http://al@ce:***@proxy.corp:3128")
    }

    @Test(arguments: [
        (
            "socks4://p:1080",
            "the proxy socks4://p:1080 uses socks4://, which is not supported (use http://, https:// or socks5://)"
        ),
        ("http://u:secret@p:1/path", "the proxy http://u:***@p:1/path has a path; give only scheme, host and port"),
        ("http://:8080", "the proxy http://:8080 has no host"),
    ])
    func aProxyThatCannotBeUsedIsNamedWithoutItsPassword(_ text: String, _ message: String) {
        #expect(throws: HTTPProxyError.self) { try HTTPProxy(url: text) }
        do {
            _ = try HTTPProxy(url: text)
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func aBadVariableIsNamed() {
        #expect {
            try HTTPProxySettings.environment(["https_proxy": "socks4://p"])
        } throws: { error in
            (error as? HTTPProxyError)?.message.hasPrefix("https_proxy: ") == true
        }
    }
}
