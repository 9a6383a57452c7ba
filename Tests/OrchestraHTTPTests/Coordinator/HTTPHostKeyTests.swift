import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// The host key: what a host limit matches, for the coordinator, the workflow's `hosts:` and
/// the durable resources alike.
@Suite("HTTPHostKey", .timeLimit(.minutes(1)), .takesTurns)
struct HTTPHostKeyTests {
    @Test(arguments: [
        ("https", "HOST:443", "host:443"),
        ("https", "host", "host:443"),
        ("HTTPS", "host", "host:443"),
        ("http", "host", "host:80"),
        ("http", "host:", "host:80"),
        ("http", "Example.COM.:8080", "example.com:8080"),
        ("https", "example.com.", "example.com:443"),
        ("http", "[::1]:8080", "[::1]:8080"),
        ("https", "[::1]", "[::1]:443"),
        ("http", "[2001:DB8::1]:80", "[2001:db8::1]:80"),
        ("http", "user:pass@HOST:8080", "host:8080"),
        ("https", "a@b@host", "host:443"),
        ("ftp", "host", "host"),
        ("http", "host:x", "host"),
    ])
    func aRequestsKeyIsItsHostInLowercaseAndItsPortOrTheSchemesDefault(
        scheme: String, authority: String, key: String
    ) {
        #expect(HTTPHostKey(scheme: scheme, authority: authority).description == key)
    }

    @Test(
        arguments: [
            ("HOST:443", "host:443"), ("Example.com.", "example.com"), ("[::1]:8080", "[::1]:8080"), ("[::1]", "[::1]"),
            ("127.0.0.1", "127.0.0.1"), ("::1", nil), ("user@host", nil), ("http://a.test", nil), ("a.test:0", nil),
            ("a.test:65536", nil), (".", nil), ("", nil), ("a test", nil), ("[]", nil), ("[::1]x", nil),
            ("a.test/x", nil),
        ] as [(String, String?)])
    func aPatternNamesAHostOnEveryPortOrOnePort(pattern: String, key: String?) {
        #expect(HTTPHostKey(pattern: pattern)?.description == key)
        #expect(HTTPCoordinator.isHostPattern(pattern) == (key != nil))
    }

    /// Which entry of `hosts:` limits a request: its `host:port`, else its host, else none.
    @Test(
        arguments: [
            (["host:443"], "https", "HOST", "host:443"),
            (["HOST:443"], "https", "host", "host:443"),
            (["host:443"], "http", "host", nil),
            (["host"], "https", "host:8443", "host"),
            (["host", "host:8443"], "https", "host:8443", "host:8443"),
            (["host", "host:8443"], "https", "host", "host"),
            (["example.com."], "https", "EXAMPLE.COM", "example.com"),
            (["example.com"], "https", "example.com.:443", "example.com"),
            (["[::1]:8080"], "http", "[::1]:8080", "[::1]:8080"),
            (["[::1]"], "http", "[::1]:9", "[::1]"),
            (["[::1]:8080"], "http", "[::1]", nil),
            (["host:8080"], "http", "user:pw@host:8080", "host:8080"),
            (["host"], "http", "hostile.test", nil),
        ] as [([String], String, String, String?)])
    func aRequestUsesTheEntryNamingItsHostAndPortElseItsHost(
        patterns: [String], scheme: String, authority: String, entry: String?
    ) {
        let limits = HTTPHostKey.limits(patterns.map { ($0, 1) })
        #expect(HTTPHostKey(scheme: scheme, authority: authority).entry(in: limits)?.key.description == entry)
    }

    @Test func twoPatternsNamingOneHostKeepTheLowerLimit() {
        let limits = HTTPHostKey.limits([("Example.com", 4), ("example.com.", 2), ("example.com:443", 3)])
        #expect(limits.map { "\($0.key)=\($0.value)" }.sorted() == ["example.com:443=3", "example.com=2"])
    }

    /// `HOST:443` and `https://host` are one host: a `hostLimits` entry written one way limits
    /// requests written the other (each was limited by the per-host limit alone before).
    @Test(arguments: [("h.test:443", "H.TEST"), ("H.test", "h.test.:443"), ("[::1]:443", "[::1]")])
    func theCoordinatorLimitsEveryAuthorityOfTheHostItsEntryNames(pattern: String, authority: String) async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(maxConcurrentRequests: 100, maxConcurrentRequestsPerHost: 5, hostLimits: [pattern: 1]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6 {
                group.addTask { _ = try await api.data(for: get(authority, "/\(index)")) }
            }
            try await waitUntil("all six arrived or waiting") { transport.inFlight + api.waitingCount == 6 }
            #expect(transport.inFlight == 1, "the entry '\(pattern)' limits requests to \(authority)")
            gate.open()
            try await group.waitForAll()
        }
    }

    /// Without an entry, the per-host limit counts `https://HOST` and `https://host:443`
    /// together: they are one host.
    @Test func thePerHostLimitCountsEverySpellingOfAHostTogether() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 100, maxConcurrentRequestsPerHost: 2))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, authority) in ["h.test", "H.TEST:443", "h.test.", "h.test:443"].enumerated() {
                group.addTask { _ = try await api.data(for: get(authority, "/\(index)")) }
            }
            try await waitUntil("all four arrived or waiting") { transport.inFlight + api.waitingCount == 4 }
            #expect(transport.inFlight == 2)
            gate.open()
            try await group.waitForAll()
        }
    }
}
