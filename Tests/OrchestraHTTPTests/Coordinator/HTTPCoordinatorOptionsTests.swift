import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

private func redirect(_ status: Int, to location: String) -> (HTTPResponse, Data) {
    var response = HTTPResponse(status: .init(code: status))
    response.headerFields[.location] = location
    return (response, Data("moved".utf8))
}

private func post(_ host: String, _ path: String, headers: HTTPFields = [:]) -> HTTPRequest {
    var request = HTTPRequest(method: .post, scheme: "https", authority: host, path: path)
    request.headerFields = headers
    return request
}

/// Redirects, host limits and per-request options of `HTTPCoordinator`.
@Suite("HTTPCoordinator options", .timeLimit(.minutes(1)), .takesTurns)
struct HTTPCoordinatorOptionsTests {
    /// What the transport received: method, URL and body of each request.
    private final class Log: Sendable {
        let entries = Locked<[(method: String, url: String, body: String?, headers: HTTPFields)]>([])
        func add(_ request: HTTPRequest, _ body: Data?) {
            entries.withLock {
                $0.append(
                    (
                        request.method.rawValue, "\(request.scheme!)://\(request.authority!)\(request.path!)",
                        body.map { String(decoding: $0, as: UTF8.self) }, request.headerFields
                    ))
            }
        }
        var all: [(method: String, url: String, body: String?, headers: HTTPFields)] { entries.withLock { $0 } }
    }

    @Test(
        arguments: [
            (307, "POST", "payload"), (308, "POST", "payload"),
            (303, "GET", nil), (302, "GET", nil), (301, "GET", nil),
        ] as [(Int, String, String?)])
    func aRedirectedPostKeepsOrChangesItsMethodAndBodyAsRFC9110Says(
        status: Int, method: String, body: String?
    ) async throws {
        let log = Log()
        let transport = ScriptedHTTPTransport { request, body in
            log.add(request, body)
            return request.path == "/start" ? redirect(status, to: "/next?x=1") : ok("done")
        }
        let api = HTTPCoordinator(transport: transport)
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        let result = try await api.data(for: post("a.test", "/start", headers: headers), body: Data("payload".utf8))
        #expect(String(decoding: result.body, as: UTF8.self) == "done")
        #expect(result.redirects == [HTTPRedirect(status: status, location: "https://a.test/next?x=1")])
        let second = try #require(log.all.last)
        #expect(second.method == method && second.url == "https://a.test/next?x=1" && second.body == body)
        #expect((second.headers[.contentType] != nil) == (body != nil), "a body dropped takes its Content-Type with it")
        #expect(result.attempts == 2)
    }

    @Test func otherMethodsKeepTheirMethodOn301And302ButNotOn303() async throws {
        let log = Log()
        let transport = ScriptedHTTPTransport { request, body in
            log.add(request, body)
            guard let status = Int(request.path!.dropFirst()) else { return ok() }
            return redirect(status, to: "/end")
        }
        let api = HTTPCoordinator(transport: transport)
        for status in [301, 302, 303] {
            _ = try await api.data(
                for: HTTPRequest(method: .put, scheme: "https", authority: "a.test", path: "/\(status)"),
                body: Data("b".utf8))
        }
        let ends = log.all.filter { $0.url.hasSuffix("/end") }.map { "\($0.method) \($0.body ?? "-")" }
        #expect(ends == ["PUT b", "PUT b", "GET -"])
    }

    @Test func aRedirectToAnotherOriginDropsCredentials() async throws {
        let log = Log()
        let transport = ScriptedHTTPTransport { request, body in
            log.add(request, body)
            if request.authority == "a.test", request.path == "/same" { return redirect(302, to: "/there") }
            if request.authority == "a.test", request.path == "/there" {
                return redirect(307, to: "https://b.test/elsewhere")
            }
            return ok()
        }
        let api = HTTPCoordinator(transport: transport)
        var request = get("a.test", "/same")
        request.headerFields[.authorization] = "Bearer secret"
        request.headerFields[.cookie] = "session=1"
        request.headerFields[.accept] = "text/plain"
        let result = try await api.data(for: request)
        #expect(result.redirects.map(\.location) == ["https://a.test/there", "https://b.test/elsewhere"])
        let sent = log.all
        #expect(sent[1].headers[.authorization] == "Bearer secret", "same origin: credentials kept")
        #expect(
            sent[2].headers[.authorization] == nil && sent[2].headers[.cookie] == nil,
            "other origin: credentials dropped")
        #expect(sent[2].headers[.accept] == "text/plain")
    }

    @Test func aRedirectIsReturnedAsIsWhenTheRequestSaysNotToFollow() async throws {
        let transport = ScriptedHTTPTransport { _, _ in redirect(302, to: "/elsewhere") }
        let api = HTTPCoordinator(transport: transport)
        let result = try await api.data(
            for: get("a.test", "/"), options: HTTPRequestOptions(redirects: HTTPRedirectPolicy.never))
        #expect(result.status.code == 302 && result.response.headerFields[.location] == "/elsewhere")
        #expect(result.redirects.isEmpty && transport.requests.count == 1)
    }

    @Test func aChainLongerThanThePolicyFailsNamingTheCountAndTheLastLocation() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            let step = Int(request.path!.dropFirst(7))!  // "/chain/N"
            return redirect(302, to: "/chain/\(step + 1)")
        }
        let api = HTTPCoordinator(transport: transport)
        let error = await #expect(throws: HTTPRedirectError.self) {
            _ = try await api.data(
                for: get("a.test", "/chain/0"), options: HTTPRequestOptions(redirects: .follow(maxHops: 3)))
        }
        #expect(error?.code == .tooManyRedirects)
        #expect(error?.hops.count == 4)
        #expect(error?.description.contains("at most 3") == true)
        #expect(error?.description.contains("https://a.test/chain/4") == true)
        #expect(transport.requests.count == 4)
    }

    @Test func aLocationThatIsNotHTTPIsANamedError() async throws {
        let transport = ScriptedHTTPTransport { _, _ in redirect(301, to: "ftp://files.test/x") }
        let api = HTTPCoordinator(transport: transport)
        let error = await #expect(throws: HTTPRedirectError.self) { _ = try await api.data(for: get("a.test")) }
        #expect(error?.code == .invalidLocation && error?.description.contains("ftp://files.test/x") == true)
    }

    @Test func aHostLimitEntryIsSharedByEveryHostItMatchesAndReplacesThePerHostLimit() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        // "slow.test" (any port) at most 2 together; other hosts 5 each.
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(
                maxConcurrentRequests: 100, maxConcurrentRequestsPerHost: 5,
                hostLimits: ["SLOW.test": 2, "fast.test:8443": 1]
            ))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<30 {
                let host = ["slow.test:1", "slow.test:2", "other.test", "fast.test:8443", "fast.test:9000"][index % 5]
                group.addTask { _ = try await api.data(for: get(host, "/\(index)")) }
            }
            try await waitUntil("all 30 arrived or waiting") { transport.inFlight + api.waitingCount == 30 }
            let slow = transport.inFlight(host: "slow.test:1") + transport.inFlight(host: "slow.test:2")
            #expect(slow == 2)
            #expect(transport.inFlight(host: "fast.test:8443") == 1, "host:port entry")
            #expect(transport.inFlight(host: "fast.test:9000") == 5, "another port of that host: the per-host limit")
            #expect(transport.inFlight(host: "other.test") == 5)
            gate.open()
            try await group.waitForAll()
        }
        #expect(transport.requests.count == 30)
    }

    @Test func hostLimitsCanBeRaisedWhileRequestsWait() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 50, hostLimits: ["h.test": 1]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6 { group.addTask { _ = try await api.data(for: get("h.test", "/\(index)")) } }
            try await waitUntil("one sent, five waiting") { transport.inFlight == 1 && api.waitingCount == 5 }
            api.setLimits(hosts: ["h.test": 4])
            try await waitUntil("four sent") { transport.inFlight == 4 }
            #expect(api.waitingCount == 2)
            gate.open()
            try await group.waitForAll()
        }
    }

    @Test(arguments: [
        ("a.test", true), ("a.test:80", true), ("[::1]", true), ("[::1]:8080", true), ("a.test:0", false),
        ("a.test:99999", false), ("http://a.test", false), ("", false), ("a:b:c", false), ("a.test/x", false),
    ])
    func hostPatternsAreAHostOrAHostAndPort(pattern: String, valid: Bool) {
        #expect(HTTPCoordinator.isHostPattern(pattern) == valid)
    }

    @Test func aRequestCanRetryAPostOnTheStatusesItNames() async throws {
        let clock = ManualClock()
        let count = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            let n = count.withLock {
                $0 += 1
                return $0
            }
            return n < 3 ? (HTTPResponse(status: .init(code: 409)), Data()) : ok("third")
        }
        let api = HTTPCoordinator(transport: transport, clock: clock)
        let retry = HTTPRetry(
            policy: RetryPolicy(maxAttempts: 3, initialDelay: .seconds(1), jitter: 0), statuses: [409], methods: .all)
        let task = Task {
            try await api.data(
                for: post("a.test", "/orders"), body: Data("x".utf8), options: HTTPRequestOptions(retry: retry))
        }
        // While an attempt runs, its 30 s timeout sleeps on the clock too: wait for the backoff
        // itself (a deadline sooner than that), or advancing would fire the attempt's timeout.
        // Under ThreadSanitizer the attempt's own timer was seen first and the test failed.
        @Sendable func backingOff(after attempts: Int) -> Bool {
            let sleepers = clock.pendingSleepers
            return sleepers.count == 1 && sleepers[0] < clock.now.advanced(by: .seconds(30))
                && count.withLock { $0 } == attempts
        }
        try await waitUntil("first backoff") { backingOff(after: 1) }
        clock.advanceToNextDeadline()
        try await waitUntil("second backoff") { backingOff(after: 2) }
        clock.advanceToNextDeadline()
        let result = try await task.value
        #expect(String(decoding: result.body, as: UTF8.self) == "third" && result.attempts == 3)

        // The same POST with the default rules: 409 is not transient and POST is not idempotent.
        count.withLock { $0 = 0 }
        let once = try await api.data(for: post("a.test", "/orders"), body: Data("x".utf8))
        #expect(once.status.code == 409 && once.attempts == 1)
    }

    @Test func aRequestsOwnTimeoutReplacesTheConfigurations() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { _, _ in
            try await AsyncEvent().wait()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: .seconds(60), retry: .never), clock: clock)
        let task = Task { try await api.data(for: get("a.test"), options: HTTPRequestOptions(timeout: .seconds(2))) }
        try await waitUntil("the attempt's timer") { clock.pendingSleepers.count == 1 }
        #expect(clock.pendingSleepers.first?.offset == .seconds(2))
        clock.advance(by: .seconds(2))
        await #expect(throws: TimeoutError.self) { try await task.value }
    }

    @Test func onAttemptSeesEachAttemptWhileItHoldsItsSlot() async throws {
        let events = Locked<[String]>([])
        let api = Locked<HTTPCoordinator?>(nil)
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/a" ? redirect(307, to: "/b") : ok()
        }
        let coordinator = HTTPCoordinator(transport: transport, configuration: .init(maxConcurrentRequests: 1))
        api.withLock { $0 = coordinator }
        let options = HTTPRequestOptions(onAttempt: { event in
            let inFlight = api.withLock { $0!.inFlight.now }
            switch event {
            case .started(let request): events.withLock { $0.append("start \(request.path!) in flight \(inFlight)") }
            case .ended(let request, let outcome):
                let status = (try? outcome.get().status.code).map(String.init) ?? "error"
                events.withLock { $0.append("end \(request.path!) \(status) in flight \(inFlight)") }
            }
        })
        _ = try await coordinator.data(for: get("a.test", "/a"), options: options)
        #expect(
            events.withLock { $0 } == [
                "start /a in flight 1", "end /a 307 in flight 1", "start /b in flight 1", "end /b 200 in flight 1",
            ])
    }

    @Test func willSendRunsOnceTheRequestHasItsSlotAndItsErrorEndsTheRequestUnsent() async throws {
        struct NotRecorded: Error {}
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/first" { try await gate.pass() }
            return ok()
        }
        let coordinator = HTTPCoordinator(
            transport: transport,
            configuration: .init(maxConcurrentRequests: 1, retry: RetryPolicy(maxAttempts: 3, jitter: 0)))
        let calls = Locked<[String]>([])
        let options = HTTPRequestOptions(willSend: { request in
            calls.withLock { $0.append("\(request.path!) in flight \(coordinator.inFlight.now)") }
            if request.path == "/refused" { throw NotRecorded() }
        })
        try await withHangGuard {
            async let first = coordinator.data(for: get("a.test", "/first"), options: options)
            try await waitUntil("the first request in flight") { transport.inFlight == 1 }
            async let second = coordinator.data(for: get("a.test", "/second"), options: options)
            // The second waits for the slot: it is not about to be sent yet.
            try await waitUntil("the second waiting") { coordinator.waitingCount == 1 }
            #expect(calls.withLock { $0 } == ["/first in flight 1"])
            gate.open()
            _ = try await (first, second)
        }
        #expect(calls.withLock { $0 } == ["/first in flight 1", "/second in flight 1"])
        await #expect(throws: NotRecorded.self) {
            try await coordinator.data(for: get("a.test", "/refused"), options: options)
        }
        // Neither sent nor retried.
        #expect(transport.requests.compactMap(\.path) == ["/first", "/second"])
        #expect(calls.withLock { $0.count } == 3)
    }

    @Test func anUnsignedRequestSkipsAuthentication() async throws {
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t1") }
        let transport = ScriptedHTTPTransport { _, _ in ok() }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(authentication: .init(refresher: refresher)))
        _ = try await api.data(for: get("a.test", "/signed"))
        _ = try await api.data(for: get("a.test", "/public"), options: HTTPRequestOptions(isAuthenticated: false))
        let authorizations = transport.requests.map { $0.headerFields[.authorization] }
        #expect(authorizations == ["Bearer t0", nil])
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func aNegativeRedirectLimitIsAProgrammerErrorNamingTheValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = HTTPRedirectPolicy(maxHops: -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("HTTPRedirectPolicy(maxHops:): must not be negative, got -1"), "\(message)")
    }
}
