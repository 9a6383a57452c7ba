import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

// A token refresher: when the access token expires under many concurrent
// requests, every request waits while ONE refresh runs, then is re-sent with the new token.

extension Scenario {
    /// How many requests the scenario sends at once.
    static let tokenRequests = 200

    static let tokenRefresh = Scenario(
        name: "token-refresh",
        title: "The token expires under \(tokenRequests) concurrent requests: one refresh, every request succeeds",
        summary: "token expires under \(tokenRequests) requests; one refresh",
        replaces:
            "TokenRefresher singleton + dispatch_semaphore_wait(continueMutex) + a hand-kept list of failed requests to re-send",
        orchestra: """
            let http = HTTPCoordinator(transport: URLSessionTransport(), configuration: .init(
                maxConcurrentRequests: 64, authentication: .init(refresher: TokenRefresher(initial: token) { _ in try await refresh() })))
            let profiles = try await requests.concurrentMap(limit: \(tokenRequests)) { try await http.data(for: $0) }
            """,
        limit: 64,
        lanes: { _ in (1...tokenRequests).map { .download("req-\($0)") } + [.helper("refresh")] },
        body: { stage in
            let refreshesBefore = stage.server.refreshCalls
            let login = try await stage.send(HTTPRequest(method: .post, url: stage.url("login")))
            let token = try JSONDecoder().decode(TokenAnswer.self, from: login.body)

            let refresher = TokenRefresher(initial: AuthToken(token.access_token)) { _ in
                stage.note(
                    "a request got 401 → ONE refresh starts; the others wait for it, holding no slot", tone: .attention)
                let answer = try await stage.perform(stage.lane(named: "refresh")) {
                    let result = try await stage.http.sendBypassingLimits(
                        HTTPRequest(method: .post, url: stage.url("refresh")))
                    guard result.status == .ok else { throw UnexpectedStatus(result: result) }
                    return try JSONDecoder().decode(TokenAnswer.self, from: result.body)
                }
                stage.note("new token → every request that got 401 is re-sent with it", tone: .attention)
                return AuthToken(answer.access_token)
            }
            let http = HTTPCoordinator(
                transport: stage.transport,
                configuration: .init(
                    maxConcurrentRequests: 64, maxConcurrentRequestsPerHost: 64, requestTimeout: .seconds(30),
                    retry: .never,
                    authentication: .init(refresher: refresher)
                )
            )

            let attempts = try await withThrowingTaskGroup(of: [Int].self) { group in
                // The server expires the token once a third of the requests have arrived.
                group.addTask {
                    try await stage.server.arrival(of: "/me", count: tokenRequests / 3)
                    stage.server.expireToken()
                    stage.note("server: token expired after \(tokenRequests / 3) requests arrived", tone: .bad)
                    return []
                }
                group.addTask {
                    try await (1...tokenRequests).concurrentMap(limit: tokenRequests) { number in
                        try await stage.perform(stage.lane(named: "req-\(number)")) {
                            try await stage.send(
                                HTTPRequest(method: .get, url: stage.url("me", latency: 40)), through: http
                            ).attempts
                        }
                    }
                }
                var attempts: [Int] = []
                for try await batch in group { attempts += batch }
                return attempts
            }

            let refreshes = stage.server.refreshCalls - refreshesBefore
            let resent = attempts.count { $0 > 1 }
            stage.note(
                "\(attempts.count) requests succeeded; \(resent) got 401 and were re-sent after the one refresh",
                tone: .good)
            stage.fact("refresh calls seen by the server", "\(refreshes)", holds: refreshes == 1)
            stage.fact(
                "requests that succeeded", "\(attempts.count)/\(tokenRequests)", holds: attempts.count == tokenRequests)
            stage.fact("requests re-sent after a 401", "\(resent)")
        })
}

/// `POST /login` and `/refresh`'s answer.
private struct TokenAnswer: Decodable {
    // swiftlint:disable:next identifier_name
    let access_token: String
}
