import Foundation
import HTTPTypes
import OrchestraAsyncHTTPClient
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Requests to an IPv6 address, on both transports (issue 35: `http://[::1]:port/` failed on
/// URLSession on Linux with "URLSession cannot send to this URL", before anything was sent).
@Suite("IPv6 literals", .serialized, .timeLimit(.minutes(1)), .takesTurns)
struct IPv6LiteralTests {
    /// Whether this machine can listen on `::1` (a CI container may have no IPv6 loopback).
    static let loopbackAvailable: Bool = {
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

    static let reason: Comment = "this machine cannot listen on ::1 (no IPv6 loopback)"

    enum Transport: String, CaseIterable, Sendable {
        case urlSession, asyncHTTPClient
    }

    static func withTransport<T: Sendable>(
        _ kind: Transport, _ body: @escaping @Sendable (any HTTPTransport) async throws -> T
    ) async throws -> T {
        switch kind {
        case .urlSession: return try await body(URLSessionTransport())
        case .asyncHTTPClient: return try await AsyncHTTPClientTransport.withTransport { try await body($0) }
        }
    }

    @Test(.enabled(if: loopbackAvailable, reason), arguments: Transport.allCases)
    func aRequestToAnIPv6AddressReachesItsServer(_ kind: Transport) async throws {
        try await withDemoServer(configuration: .init(host: "::1")) { server in
            #expect(server.baseURL.absoluteString == "http://[::1]:\(server.port)")
            try await Self.withTransport(kind) { transport in
                var request = HTTPRequest(
                    method: .post, scheme: "http", authority: "[::1]:\(server.port)", path: "/anything/a?b=1")
                request.headerFields[.contentType] = "text/plain"
                let (response, body) = try await transport.send(request, body: Data("café".utf8))
                #expect(response.status == .ok)
                let echo = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
                #expect(echo["path"] as? String == "/anything/a?b=1")
                #expect(echo["data"] as? String == "café")
                // The server's authority (from the Host field) is the address.
                #expect(echo["url"] as? String == "http://[::1]:\(server.port)/anything/a?b=1")
            }
        }
    }

    #if canImport(FoundationNetworking)
    @Test(arguments: [
        ("http://[::1]:8080/a?b", "http://--1.ipv6-literal.invalid:8080/a?b"),
        ("https://[fe80::1:AB]/", "https://fe80--1-AB.ipv6-literal.invalid/"),
        ("http://[::ffff:1.2.3.4]:1/", "http://--ffff-1.2.3.4.ipv6-literal.invalid:1/"),
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a"),
        ("http://x.test/", "http://x.test/"),
    ])
    func urlSessionIsGivenAStandInForTheAddress(_ url: String, _ standIn: String) throws {
        let written = try #require(URL(string: url))
        let given = try #require(IPLiteralURL.standIn(for: written))
        #expect(given.absoluteString == standIn)
        #expect(IPLiteralURL.realURL(given)?.absoluteString == (url == standIn ? nil : url))
    }

    @Test func anAddressWithAZoneIsRefusedInWords() throws {
        let request = HTTPRequest(method: .get, scheme: "http", authority: "[fe80::1%25eth0]:80", path: "/")
        #expect {
            try URLSessionTransport.urlRequest(for: request, body: nil)
        } throws: { error in
            (error as? HTTPTransportError)?.message.contains("cannot send to an IPv6 address with a zone") == true
        }
    }
    #endif
}
