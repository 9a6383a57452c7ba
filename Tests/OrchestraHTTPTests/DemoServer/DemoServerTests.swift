import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

extension DemoServer {
    func request(_ path: String, method: HTTPRequest.Method = .get) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: authority, path: path)
    }
}

func text(_ result: HTTPResult) -> String {
    String(decoding: result.body, as: UTF8.self)
}

/// Parses the demo server's token response.
func token(from result: HTTPResult) throws -> AuthToken {
    let json = try JSONSerialization.jsonObject(with: result.body) as? [String: Any]
    guard let value = json?["access_token"] as? String else { throw TestError("no access_token in \(text(result))") }
    return AuthToken(value, lifetime: (json?["expires_in"] as? Int).map { .seconds($0) })
}

/// Real requests over URLSession to the demo server on 127.0.0.1. No real-time waits: the
/// server's counters and its gate say when requests arrived.
@Suite("HTTPCoordinator against the demo server", .serialized, .timeLimit(.minutes(2)), .takesTurns)
struct DemoServerTests {
    @Test(arguments: [4, 16])
    func theLimitHoldsAndIsWhatLimitsBelowAndAboveTheTransportsDefaultCap(limit: Int) async throws {
        try await withDemoServer { server in
            let api = HTTPCoordinator(
                transport: URLSessionTransport(),
                configuration: .init(maxConcurrentRequests: limit, maxConcurrentRequestsPerHost: limit)
            )
            server.closeGate()
            let results = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<40 {
                    group.addTask { text(try await api.data(for: server.request("/gated/\(index)"))) }
                }
                // Exactly `limit` reach the server while the gate is closed: 16 is above Linux
                // URLSession's default of 6 per host, so the transport does not cap it.
                try await waitUntil("\(limit) requests held at the server") { server.inFlight == limit }
                #expect(api.waitingCount == 40 - limit)
                server.openGate()
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(results == Set((0..<40).map(String.init)))
            #expect(server.peakInFlight == limit)
        }
    }

    @Test func resultsCanBeHandledInInputOrderAndOneAfterAnother() async throws {
        try await withDemoServer { server in
            let api = HTTPCoordinator(transport: URLSessionTransport(), configuration: .init(maxConcurrentRequests: 4))
            var ordered: [String] = []
            for try await result in (0..<12).orderedResults(
                limit: 4,
                { index in
                    try await api.data(for: server.request("/echo/\(index)"))
                })
            {
                ordered.append(text(try result.get()))
            }
            #expect(ordered == (0..<12).map(String.init))

            server.resetPeak()
            var serial: [String] = []
            for index in 0..<5 { serial.append(text(try await api.data(for: server.request("/echo/s\(index)")))) }
            #expect(serial == (0..<5).map { "s\($0)" })
            #expect(server.peakInFlight == 1)
        }
    }

    @Test func aRequestBuiltFromAnotherOnesResponse() async throws {
        try await withDemoServer { server in
            let api = HTTPCoordinator(transport: URLSessionTransport())
            let login = try token(from: try await api.data(for: server.request("/login", method: .post)))
            var profile = server.request("/protected")
            profile.headerFields[.authorization] = "Bearer \(login.value)"
            #expect(try await api.data(for: profile).status == .ok)
        }
    }

    @Test func handlesAsDependenciesAndRequestGraphsAsTaskGraphNodes() async throws {
        try await withDemoServer { server in
            let api = HTTPCoordinator(transport: URLSessionTransport())
            // API managers started separately: B is sent only after A returned.
            server.closeGate()
            let first = api.start(server.request("/gated/first"))
            let second = api.start(server.request("/echo/second"), after: [first])
            try await waitUntil("first arrived") { server.arrivals(of: "/gated/first") == 1 }
            #expect(server.arrivals(of: "/echo/second") == 0)
            server.openGate()
            #expect(text(try await second.result) == "second")

            // A graph of requests: login, then profile and feed in parallel, then the page.
            let graph = TaskGraph()
            let login = graph.add("login") {
                try token(from: try await api.data(for: server.request("/login", method: .post)))
            }
            let profile = graph.add("profile", after: login) { token in
                var request = server.request("/protected")
                request.headerFields[.authorization] = "Bearer \(token.value)"
                return try await api.data(for: request).status.code
            }
            let feed = graph.add("feed", after: login) { _ in
                text(try await api.data(for: server.request("/echo/feed")))
            }
            let page = graph.add("page", after: profile, feed) { status, feed in "\(status) \(feed)" }
            let result = try await graph.run(limit: 4)
            #expect(try result.value(of: page) == "200 feed")
        }
    }

    @Test func aLargeDownloadOverURLSessionReportsItsProgress() async throws {
        try await withDemoServer { server in
            let api = HTTPCoordinator(transport: URLSessionTransport())
            let reports = EventLog<(Int, Int?)>()
            let result = try await api.data(for: server.request("/payload/3000000")) { reports.append(($0, $1)) }
            #expect(result.body.count == 3_000_000)
            let events = reports.events
            #expect(!events.isEmpty)
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.0 < $1.0 }, "growing")
            #expect(events.last?.0 == 3_000_000)
            #expect(events.allSatisfy { $0.1 == 3_000_000 })
            // Cancellation works on this path too.
            let hanging = Task { try await api.data(for: server.request("/hang")) { _, _ in } }
            try await waitUntil("arrived") { server.arrivals(of: "/hang") == 1 }
            hanging.cancel()
            await #expect(throws: CancellationError.self) { try await withHangGuard { try await hanging.value } }
        }
    }

    @Test func aFlakyEndpointIsRetriedAfterItsRetryAfter() async throws {
        try await withDemoServer { server in
            let clock = ManualClock()
            // No request timeout: the only sleeps on the clock are the backoffs.
            let api = HTTPCoordinator(
                transport: URLSessionTransport(), configuration: .init(requestTimeout: nil), clock: clock)
            let request = Task { try await api.data(for: server.request("/flaky/a?failures=2")) }
            for wait in 1...2 {
                try await clock.waitForSleepers(1)
                #expect(server.arrivals(of: "/flaky/a") == wait)
                #expect(clock.pendingSleepers.count == 1)
                _ = clock.advance(by: .seconds(1))
            }
            let result = try await withHangGuard { try await request.value }
            #expect(result.status == .ok && result.attempts == 3)
            #expect(text(result) == "recovered after 2")
        }
    }

    @Test func aRequestTheServerNeverAnswersTimesOut() async throws {
        try await withDemoServer { server in
            let clock = ManualClock()
            let api = HTTPCoordinator(
                transport: URLSessionTransport(), configuration: .init(requestTimeout: .seconds(5), retry: .never),
                clock: clock)
            let request = Task { try await api.data(for: server.request("/hang")) }
            try await withHangGuard { try await server.arrival(of: "/hang") }
            try await clock.waitForSleepers(1)
            _ = clock.advance(by: .seconds(5))
            let error = await #expect(throws: TimeoutError.self) { try await withHangGuard { try await request.value } }
            #expect(error?.code == .timedOut)
        }
    }

    @Test func cancellingARequestInFlightEndsItWithCancellationError() async throws {
        try await withDemoServer { server in
            let api = HTTPCoordinator(transport: URLSessionTransport(), configuration: .init(maxConcurrentRequests: 1))
            let request = Task { try await api.data(for: server.request("/hang")) }
            try await waitUntil("the request arrived") { server.arrivals(of: "/hang") == 1 }
            request.cancel()
            await #expect(throws: CancellationError.self) { try await withHangGuard { try await request.value } }
            // Its slot is free again.
            #expect(text(try await api.data(for: server.request("/echo/after"))) == "after")
        }
    }

    static func authenticatedAPI(
        _ server: DemoServer, maxRefreshes: Int = 5, path: String = "/protected"
    ) -> (HTTPCoordinator, TokenRefresher) {
        let transport = URLSessionTransport()
        let refresher = TokenRefresher(initial: AuthToken(server.issueToken()), maxRefreshes: maxRefreshes) { _ in
            // Straight to the transport: not behind the limit the waiting requests hold.
            let (response, body) = try await transport.send(server.request("/refresh", method: .post), body: nil)
            guard response.status == .ok else { throw TestError("refresh answered \(response.status.code)") }
            return try token(from: HTTPResult(response: response, body: body))
        }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(
                maxConcurrentRequests: 32, maxConcurrentRequestsPerHost: 32,
                authentication: .init(
                    refresher: refresher,
                    isAuthenticationFailure: { response, body in
                        response.status == .unauthorized
                            || String(decoding: body, as: UTF8.self).contains("token_expired")
                    })
            ))
        return (api, refresher)
    }

    @Test(arguments: ["/protected", "/protected-200"])
    func aTokenStormOf1000RequestsCausesExactlyOneRefresh(path: String) async throws {
        try await withDemoServer { server in
            let (api, refresher) = Self.authenticatedAPI(server, path: path)
            server.expireToken()
            let statuses = try await (0..<1_000).concurrentMap(limit: 1_000) { _ in
                let result = try await api.data(for: server.request(path))
                return text(result).contains("\"ok\":true")
            }
            #expect(statuses.count == 1_000)
            #expect(statuses.allSatisfy { $0 })
            #expect(server.refreshCalls == 1)
            #expect(refresher.refreshCount == 1)
            #expect(server.peakInFlight <= 32)
        }
    }

    @Test func aFailingRefreshEndpointGivesEveryWaiterTheErrorAndIsNotCalledAgain() async throws {
        try await withDemoServer(configuration: .init(refreshFails: true)) { server in
            let (api, _) = Self.authenticatedAPI(server)
            server.expireToken()
            let outcomes = await (0..<50).concurrentResults(limit: 50) { _ in
                try await api.data(for: server.request("/protected"))
            }
            #expect(
                outcomes.allSatisfy {
                    if case .failure(let error as AuthenticationError) = $0 { return error.code == .refreshFailed }
                    return false
                })
            #expect(server.refreshCalls == 1)
            await #expect(throws: AuthenticationError.self) { try await api.data(for: server.request("/protected")) }
            #expect(server.refreshCalls == 1)
        }
    }

    @Test func aRefreshThatReturnsAnInvalidTokenStopsWithTheBoundedError() async throws {
        try await withDemoServer(configuration: .init(refreshIssuesInvalidTokens: true)) { server in
            let (api, _) = Self.authenticatedAPI(server, maxRefreshes: 3)
            server.expireToken()
            // Each request is re-sent at most twice; a request still refused returns its 401.
            var outcomes: [String] = []
            for _ in 0..<4 {
                do {
                    outcomes.append("HTTP \(try await api.data(for: server.request("/protected")).status.code)")
                } catch let error as AuthenticationError {
                    outcomes.append("\(error.code)")
                }
            }
            #expect(outcomes == ["HTTP 401", "excessiveRefresh", "excessiveRefresh", "excessiveRefresh"])
            #expect(server.refreshCalls == 3, "bounded: no loop")
        }
    }
}
