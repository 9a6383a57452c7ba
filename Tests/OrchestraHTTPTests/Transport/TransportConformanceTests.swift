import Foundation
import HTTPTypes
import NetworkTestSupport
import OrchestraAsyncHTTPClient
import OrchestraDemoServer
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

/// Both transports pass every check of the conformance suite against the demo server.
// 16 checks per transport, a 4 MB gzip bomb and an 8 MB body among them: 2 minutes were too
// few under ThreadSanitizer beside the rest of the suite (CI, 2 cores).
@Suite("HTTPTransportConformance", .serialized, .timeLimit(.minutes(6)), .takesTurns)
struct TransportConformanceTests {
    static let checks = HTTPTransportConformance.Check.allCases.filter { !$0.needsProxy }

    @Test(arguments: checks)
    func urlSessionTransport(_ check: HTTPTransportConformance.Check) async throws {
        try await withDemoServer { server in
            try await HTTPTransportConformance(transport: URLSessionTransport(), server: server.baseURL).run(check)
        }
    }

    @Test(arguments: checks)
    func asyncHTTPClientTransport(_ check: HTTPTransportConformance.Check) async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                try await HTTPTransportConformance(transport: transport, server: server.baseURL).run(check)
            }
        }
    }

    /// Against a real httpbin, when `ORCHESTRA_HTTPBIN` gives its URL
    /// (`pip install httpbin gunicorn; gunicorn -b 127.0.0.1:8080 -k gthread --threads 32 httpbin:app`).
    static let httpbin = ProcessInfo.processInfo.environment["ORCHESTRA_HTTPBIN"].flatMap(URL.init(string:))
    static let httpbinChecks = checks.filter { !$0.needsDemoServer }

    @Test(.enabled(if: httpbin != nil, "set ORCHESTRA_HTTPBIN to an httpbin's URL"), arguments: httpbinChecks)
    func bothTransportsAgainstHTTPBin(_ check: HTTPTransportConformance.Check) async throws {
        let server = try #require(Self.httpbin)
        try await HTTPTransportConformance(transport: URLSessionTransport(), server: server).run(check)
        try await AsyncHTTPClientTransport.withTransport { transport in
            try await HTTPTransportConformance(transport: transport, server: server).run(check)
        }
    }

    /// Both transports made with a proxy send through it; one made without fails the check.
    @Test(arguments: TransportUnderTest.allCases)
    func aTransportGoesThroughItsProxy(_ kind: TransportUnderTest) async throws {
        try await withDemoServer { server in
            try await TestForwardProxy.with { proxy in
                let settings = HTTPClientSettings(proxy: .init(proxy: try HTTPProxy(url: proxy.url)))
                try await kind.with(settings) { transport in
                    var conformance = HTTPTransportConformance(transport: transport, server: server.baseURL)
                    conformance.proxiedRequests = { proxy.requests.count }
                    try await conformance.run(.goesThroughItsProxy)
                }
                let failure = await #expect(throws: HTTPTransportConformanceFailure.self) {
                    try await kind.with(HTTPClientSettings()) { transport in
                        var conformance = HTTPTransportConformance(transport: transport, server: server.baseURL)
                        conformance.proxiedRequests = { proxy.requests.count }
                        try await conformance.run(.goesThroughItsProxy)
                    }
                }
                #expect(
                    failure?.description.contains("the proxy's count 1 → 1") == true, "\(String(describing: failure))")
            }
        }
    }

    /// A transport that breaks the rules fails the checks, with words that say how.
    @Test func aTransportThatFollowsRedirectsDropsBodiesAndLeaksClientErrorsFails() async throws {
        try await withDemoServer { server in
            let real = URLSessionTransport()
            let transport = ScriptedHTTPTransport { request, _ in
                // Follows every redirect (to a 200), drops request bodies, throws URLSession's
                // own error for a refused connection.
                if request.path?.hasPrefix("/redirect-to") == true { return (HTTPResponse(status: .ok), Data()) }
                if request.authority == "127.0.0.1:1" { throw URLError(.cannotConnectToHost) }
                return try await real.send(request, body: nil)
            }
            let conformance = HTTPTransportConformance(transport: transport, server: server.baseURL)
            let redirect = await #expect(throws: HTTPTransportConformanceFailure.self) {
                try await conformance.run(.redirectsAreReturned)
            }
            #expect(redirect?.description.contains("301") == true, "\(String(describing: redirect))")
            #expect(redirect?.description.contains("200 (followed)") == true, "\(String(describing: redirect))")
            let body = await #expect(throws: HTTPTransportConformanceFailure.self) {
                try await conformance.run(.bodiesArriveByteForByte)
            }
            #expect(body?.actual.hasPrefix("0 bytes") == true, "\(String(describing: body))")
            let refused = await #expect(throws: HTTPTransportConformanceFailure.self) {
                try await conformance.run(.connectionRefusedIsTransient)
            }
            #expect(refused?.actual.contains("URLError") == true, "\(String(describing: refused))")
            // What it does right passes.
            try await conformance.run(.statusesAreReturned)
        }
    }
}
