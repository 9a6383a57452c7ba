import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

func get(_ host: String, _ path: String = "/") -> HTTPRequest {
    HTTPRequest(method: .get, scheme: "https", authority: host, path: path)
}

func ok(_ text: String = "") -> (HTTPResponse, Data) {
    (HTTPResponse(status: .ok), Data(text.utf8))
}

@Suite("HTTPCoordinator", .timeLimit(.minutes(1)), .takesTurns)
struct HTTPCoordinatorTests {
    @Test func theTotalAndPerHostLimitsAreNeverExceeded() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            try await gate.pass()
            return ok(request.path ?? "")
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 4, maxConcurrentRequestsPerHost: 2))
        let hosts = ["a.test", "b.test", "c.test"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<60 {
                // The first 20 all go to a.test: only two of them may be in flight.
                let host = index < 20 ? "a.test" : hosts[index % 3]
                group.addTask { _ = try await api.data(for: get(host, "/\(index)")) }
            }
            try await waitUntil("60 arrived or waiting") { transport.inFlight + api.waitingCount == 60 }
            #expect(hosts.allSatisfy { transport.inFlight(host: $0) <= 2 })
            #expect(transport.inFlight <= 4)
            gate.open()
            try await group.waitForAll()
        }
        #expect(transport.requests.count == 60)
        #expect(transport.peakInFlight == 4)
        #expect(hosts.allSatisfy { transport.peakInFlight(host: $0) <= 2 })
        #expect(api.inFlight.now == 0 && api.inFlight.peak == 4)
    }

    @Test func waitingRequestsStartInPriorityOrderAndAFullHostHoldsBackNoOther() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/first" { try await gate.pass() }
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 2, maxConcurrentRequestsPerHost: 1))
        let first = Task { try await api.data(for: get("a.test", "/first")) }
        try await waitUntil("first in flight") { transport.inFlight == 1 }
        let low = Task { try await api.data(for: get("a.test", "/low"), priority: 0) }
        try await waitUntil("low waits") { api.waitingCount == 1 }
        let high = Task { try await api.data(for: get("a.test", "/high"), priority: 10) }
        try await waitUntil("high waits") { api.waitingCount == 2 }
        // Host a.test is full; b.test is not held back by its waiters.
        _ = try await api.data(for: get("b.test", "/other"))
        gate.open()
        _ = try await withHangGuard { try await (first.value, low.value, high.value) }
        #expect(transport.requests.map(\.path) == ["/first", "/other", "/high", "/low"])
    }

    @Test func acrossHostsTheHigherPriorityStartsFirst() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/first" { try await gate.pass() }
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 1, maxConcurrentRequestsPerHost: 5))
        let first = Task { try await api.data(for: get("a.test", "/first")) }
        try await waitUntil("first in flight") { transport.inFlight == 1 }
        let low = Task { try await api.data(for: get("a.test", "/low"), priority: 1) }
        try await waitUntil("low waits") { api.waitingCount == 1 }
        let high = Task { try await api.data(for: get("b.test", "/high"), priority: 5) }
        try await waitUntil("high waits") { api.waitingCount == 2 }
        let later = Task { try await api.data(for: get("c.test", "/same-as-low"), priority: 1) }
        try await waitUntil("all wait") { api.waitingCount == 3 }
        gate.open()
        _ = try await withHangGuard { try await (first.value, low.value, high.value, later.value) }
        #expect(transport.requests.map(\.path) == ["/first", "/high", "/low", "/same-as-low"])
    }

    @Test func aTransportThatDoesNotStreamReportsProgressOnceAtTheEnd() async throws {
        let api = HTTPCoordinator(transport: ScriptedHTTPTransport { _, _ in ok("12345") })
        let reports = EventLog<Int>()
        _ = try await api.data(for: get("a.test")) { received, expected in
            reports.append(received)
            #expect(expected == 5)
        }
        #expect(reports.events == [5])
    }

    @Test func raisingTheLimitStartsWaitingRequestsAtOnce() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 1, maxConcurrentRequestsPerHost: 10))
        let tasks = (0..<5).map { index in Task { try await api.data(for: get("a.test", "/\(index)")) } }
        try await waitUntil("one in flight") { transport.inFlight == 1 && api.waitingCount == 4 }
        api.setLimits(total: 3)
        try await waitUntil("three in flight") { transport.inFlight == 3 && api.waitingCount == 2 }
        gate.open()
        for task in tasks { _ = try await withHangGuard { try await task.value } }
        #expect(transport.peakInFlight == 3)
    }

    @Test func aTransientStatusIsRetriedAfterItsRetryAfter() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            if calls.withLock({
                $0 += 1
                return $0
            }) == 1 {
                var busy = HTTPResponse(status: .serviceUnavailable)
                busy.headerFields[.retryAfter] = "7"
                return (busy, Data())
            }
            return ok("done")
        }
        let api = HTTPCoordinator(transport: transport, configuration: .init(requestTimeout: nil), clock: clock)
        let request = Task { try await api.data(for: get("a.test")) }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers.first?.offset == .seconds(7), "the backoff is the server's Retry-After")
        _ = clock.advance(by: .seconds(7))
        let result = try await withHangGuard { try await request.value }
        #expect(result.status == .ok)
        #expect(result.attempts == 2)
        #expect(String(decoding: result.body, as: UTF8.self) == "done")
    }

    @Test(arguments: [
        ("7", Duration.seconds(7)),
        ("0", Duration.zero),
        (" 12 ", Duration.seconds(12)),
        ("Sun, 22 Nov 2026 18:02:00 GMT", Duration.seconds(120)),  // two minutes after `now`
        ("Sun, 22 Nov 2026 17:59:00 GMT", Duration.zero),  // already passed
    ])
    func retryAfterIsReadAsSecondsOrAnHTTPDate(header: String, expected: Duration) {
        var response = HTTPResponse(status: .serviceUnavailable)
        response.headerFields[.retryAfter] = header
        let now = Date(timeIntervalSince1970: 1_795_370_400)  // Sun, 22 Nov 2026 18:00:00 GMT
        #expect(HTTPCoordinator.retryAfter(response, now: now) == expected)
    }

    @Test(arguments: ["-3", "soon", "Sunday at noon", ""])
    func aRetryAfterThatIsNeitherFormIsIgnored(header: String) {
        var response = HTTPResponse(status: .serviceUnavailable)
        response.headerFields[.retryAfter] = header
        #expect(HTTPCoordinator.retryAfter(response) == nil)
    }

    @Test func onlyIdempotentRequestsAreRetried() async throws {
        let transport = ScriptedHTTPTransport { _, _ in (HTTPResponse(status: .badGateway), Data()) }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(retry: RetryPolicy(maxAttempts: 3, initialDelay: .zero, jitter: 0)))
        let post = HTTPRequest(method: .post, scheme: "https", authority: "a.test", path: "/orders")
        let once = try await api.data(for: post, body: Data("{}".utf8))
        #expect(once.status == .badGateway && once.attempts == 1)
        var keyed = post
        keyed.headerFields[HTTPField.Name("Idempotency-Key")!] = "order-1"
        let thrice = try await api.data(for: keyed, body: Data("{}".utf8))
        #expect(thrice.status == .badGateway && thrice.attempts == 3)
        let notFound = ScriptedHTTPTransport { _, _ in (HTTPResponse(status: .notFound), Data()) }
        let plain = try await HTTPCoordinator(transport: notFound).data(for: get("a.test"))
        #expect(plain.status == .notFound && plain.attempts == 1, "a 404 is an answer, not a transient failure")
    }

    /// Every transient outcome, for every kind of request: a POST without an
    /// `Idempotency-Key` is sent once (a retried order may be placed twice); a keyed POST, PUT,
    /// DELETE and GET are retried up to the policy's attempts.
    @Test(arguments: ["408", "429", "500", "502", "503 Retry-After", "504", "connection lost"])
    func everyTransientFailureIsRetriedOnlyForIdempotentRequests(_ outcome: String) async throws {
        for (kind, expectedAttempts) in [
            ("POST", 1), ("POST with Idempotency-Key", 3), ("PUT", 3), ("DELETE", 3), ("GET", 3),
        ] {
            let transport = ScriptedHTTPTransport { _, _ in
                switch outcome {
                case "connection lost":
                    throw HTTPTransportError(code: .connectionLost, message: "connection lost", host: "a.test")
                case "503 Retry-After":
                    return (HTTPResponse(status: .serviceUnavailable, headerFields: [.retryAfter: "0"]), Data())
                default:
                    return (HTTPResponse(status: .init(code: Int(outcome)!)), Data())
                }
            }
            let api = HTTPCoordinator(
                transport: transport,
                configuration: .init(retry: RetryPolicy(maxAttempts: 3, initialDelay: .zero, jitter: 0)))
            var request = HTTPRequest(method: .get, scheme: "https", authority: "a.test", path: "/orders/1")
            switch kind {
            case "GET": break
            case "PUT": request.method = .put
            case "DELETE": request.method = .delete
            default:
                request.method = .post
                if kind.hasSuffix("Key") { request.headerFields[HTTPField.Name("Idempotency-Key")!] = "order-1" }
            }
            let body: Data? = request.method == .get || request.method == .delete ? nil : Data("{}".utf8)
            if outcome == "connection lost" {
                await #expect(throws: HTTPTransportError.self, "\(kind), \(outcome)") {
                    try await api.data(for: request, body: body)
                }
            } else {
                let result = try await api.data(for: request, body: body)
                #expect(result.attempts == expectedAttempts, "\(kind), \(outcome)")
            }
            #expect(transport.requests.count == expectedAttempts, "\(kind), \(outcome): requests sent")
        }
    }

    @Test func aRequestThatNeverGetsAnAnswerTimesOut() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { _, _ in
            try await AsyncEvent().wait()  // never answers; ends when cancelled
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: .seconds(10), retry: .never), clock: clock)
        let request = Task { try await api.data(for: get("a.test")) }
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(10))
        let error = await #expect(throws: TimeoutError.self) { try await withHangGuard { try await request.value } }
        #expect(error?.timeout == .seconds(10))
        #expect(api.inFlight.now == 0, "the slot was given back")
    }

    @Test func aCancelledWaitingRequestLeavesAndLosesNoSlot() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        let api = HTTPCoordinator(transport: transport, configuration: .init(maxConcurrentRequests: 1))
        let first = Task { try await api.data(for: get("a.test", "/first")) }
        try await waitUntil("first in flight") { transport.inFlight == 1 }
        let waiting = Task { try await api.data(for: get("a.test", "/waiting")) }
        try await waitUntil("second waits") { api.waitingCount == 1 }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await withHangGuard { try await waiting.value } }
        #expect(api.waitingCount == 0)
        gate.open()
        _ = try await withHangGuard { try await first.value }
        _ = try await api.data(for: get("a.test", "/after"))
        #expect(transport.requests.map(\.path) == ["/first", "/after"])
    }

    @Test(arguments: [false, true])
    func aTokenExpiringUnder200RequestsIsRefreshedOnceAndEveryRequestSucceeds(bodySignalsExpiry: Bool) async throws {
        let server = Locked((valid: "t0", refreshes: 0))
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/refresh" {
                let token = server.withLock { state -> String in
                    state.refreshes += 1
                    state.valid = "t\(state.refreshes)"
                    return state.valid
                }
                return ok(token)
            }
            let presented = request.headerFields[.authorization]
            let valid = server.withLock { "Bearer \($0.valid)" }
            if presented == valid { return ok("data") }
            // Some APIs answer 401; others 200 with an error in the body.
            return bodySignalsExpiry
                ? ok("{\"error\":\"token_expired\"}") : (HTTPResponse(status: .unauthorized), Data())
        }
        let coordinator = Locked<HTTPCoordinator?>(nil)
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in
            // The refresh bypasses the limits that the waiting requests hold.
            let api = coordinator.withLock { $0! }
            let result = try await api.sendBypassingLimits(
                HTTPRequest(method: .post, scheme: "https", authority: "api.test", path: "/refresh"))
            return AuthToken(String(decoding: result.body, as: UTF8.self))
        }
        let authentication = HTTPCoordinator.Authentication(
            refresher: refresher,
            isAuthenticationFailure: { response, body in
                response.status == .unauthorized || String(decoding: body, as: UTF8.self).contains("token_expired")
            }
        )
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 8, authentication: authentication))
        coordinator.withLock { $0 = api }
        server.withLock { $0.valid = "expired-on-the-server" }
        let bodies = try await withHangGuard {
            try await (0..<200).concurrentMap(limit: 200) { index in
                try await api.data(for: get("api.test", "/items/\(index)"))
            }
        }
        #expect(bodies.allSatisfy { String(decoding: $0.body, as: UTF8.self) == "data" })
        #expect(server.withLock { $0.refreshes } == 1)
        #expect(refresher.refreshCount == 1)
        let served = transport.requests.filter { $0.path?.hasPrefix("/items/") == true }
        #expect(Set(served.map(\.path)).count == 200, "no request lost")
    }

    @Test func raisingThePerHostLimitStartsWaitingRequestsToThatHostAtOnce() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 10, maxConcurrentRequestsPerHost: 1))
        let tasks = (0..<4).map { index in Task { try await api.data(for: get("a.test", "/\(index)")) } }
        try await waitUntil("one in flight, three waiting") { transport.inFlight == 1 && api.waitingCount == 3 }
        api.setLimits(perHost: 3)
        try await waitUntil("three in flight") { transport.inFlight(host: "a.test") == 3 && api.waitingCount == 1 }
        gate.open()
        for task in tasks { _ = try await task.value }
        #expect(transport.peakInFlight(host: "a.test") == 3)
    }

    @Test func loweringThePerHostLimitLetsRequestsInFlightFinishAndStartsNothingUntilBelowIt() async throws {
        // Each answer waits for one permit: the test ends requests one at a time.
        let answers = AsyncSemaphore(value: 0)
        let transport = ScriptedHTTPTransport { _, _ in
            try await answers.wait()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 10, maxConcurrentRequestsPerHost: 3))
        let tasks = (0..<5).map { index in Task { try await api.data(for: get("a.test", "/\(index)")) } }
        try await waitUntil("three in flight, two waiting") { transport.inFlight == 3 && api.waitingCount == 2 }

        api.setLimits(perHost: 1)
        #expect(api.inFlight.now == 3, "nothing in flight is interrupted")
        answers.signal()
        try await waitUntil("one request ended") { api.inFlight.now == 2 }
        #expect(api.waitingCount == 2, "two in flight, limit 1: nothing starts")
        answers.signal()
        try await waitUntil("another request ended") { api.inFlight.now == 1 }
        #expect(api.waitingCount == 2, "one in flight, limit 1: nothing starts")
        answers.signal()
        try await waitUntil("the last of the three ended and one waiter started") {
            api.waitingCount == 1 && transport.inFlight == 1
        }
        #expect(api.inFlight.now == 1)
        answers.signal()
        try await waitUntil("the last waiter started") { api.waitingCount == 0 && transport.inFlight == 1 }
        answers.signal()
        for task in tasks { _ = try await task.value }
        #expect(transport.requests.count == 5)
    }

    @Test func loweringTheTotalLimitWorksTheSameWay() async throws {
        let answers = AsyncSemaphore(value: 0)
        let transport = ScriptedHTTPTransport { _, _ in
            try await answers.wait()
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(maxConcurrentRequests: 2, maxConcurrentRequestsPerHost: 5))
        let tasks = (0..<3).map { index in Task { try await api.data(for: get(["a.test", "b.test", "c.test"][index])) }
        }
        try await waitUntil("two in flight, one waiting") { transport.inFlight == 2 && api.waitingCount == 1 }
        api.setLimits(total: 1)
        answers.signal()
        try await waitUntil("one request ended") { api.inFlight.now == 1 }
        #expect(api.waitingCount == 1, "one in flight, total limit 1: nothing starts")
        answers.signal()
        try await waitUntil("the waiter started") { api.waitingCount == 0 && transport.inFlight == 1 }
        answers.signal()
        for task in tasks { _ = try await task.value }
    }

    // MARK: Argument traps (exit tests: each runs in a child process that must crash)

    @Test(.enabled(if: ExitTests.areEnabled)) func limitsBelowOneInTheConfigurationAreProgrammerErrorsNamingTheValue()
        async
    {
        let total = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = HTTPCoordinator(
                transport: ScriptedHTTPTransport { _, _ in ok() }, configuration: .init(maxConcurrentRequests: 0))
        }
        let totalMessage = String(decoding: total?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            totalMessage.contains("HTTPCoordinator: maxConcurrentRequests must be at least 1, got 0"), "\(totalMessage)"
        )
        let perHost = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = HTTPCoordinator(
                transport: ScriptedHTTPTransport { _, _ in ok() },
                configuration: .init(maxConcurrentRequestsPerHost: -1))
        }
        let perHostMessage = String(decoding: perHost?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            perHostMessage.contains("HTTPCoordinator: maxConcurrentRequestsPerHost must be at least 1, got -1"),
            "\(perHostMessage)")
        let host = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = HTTPCoordinator(
                transport: ScriptedHTTPTransport { _, _ in ok() }, configuration: .init(hostLimits: ["a.test": 0]))
        }
        let hostMessage = String(decoding: host?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            hostMessage.contains("HTTPCoordinator: hostLimits['a.test'] must be at least 1, got 0"), "\(hostMessage)")
        let resends = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let refresher = TokenRefresher(initial: AuthToken("t")) { _ in AuthToken("u") }
            _ = HTTPCoordinator(
                transport: ScriptedHTTPTransport { _, _ in ok() },
                configuration: .init(authentication: .init(refresher: refresher, maxResends: -1)))
        }
        let resendsMessage = String(decoding: resends?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            resendsMessage.contains("HTTPCoordinator: authentication.maxResends must not be negative, got -1"),
            "\(resendsMessage)")
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func setLimitsBelowOneIsAProgrammerErrorNamingTheValue() async {
        let total = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            HTTPCoordinator(transport: ScriptedHTTPTransport { _, _ in ok() }).setLimits(total: 0)
        }
        let totalMessage = String(decoding: total?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            totalMessage.contains("HTTPCoordinator.setLimits(total:): must be at least 1, got 0"), "\(totalMessage)")
        let perHost = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            HTTPCoordinator(transport: ScriptedHTTPTransport { _, _ in ok() }).setLimits(perHost: -2)
        }
        let perHostMessage = String(decoding: perHost?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            perHostMessage.contains("HTTPCoordinator.setLimits(perHost:): must be at least 1, got -2"),
            "\(perHostMessage)")
        let host = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            HTTPCoordinator(transport: ScriptedHTTPTransport { _, _ in ok() }).setLimits(hosts: ["a.test": -5])
        }
        let hostMessage = String(decoding: host?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            hostMessage.contains("HTTPCoordinator: hostLimits['a.test'] must be at least 1, got -5"), "\(hostMessage)")
    }
}

@Suite("HTTPRequestHandle", .timeLimit(.minutes(1)), .takesTurns)
struct HTTPRequestHandleTests {
    @Test func aRequestIsSentOnlyAfterTheRequestsItDependsOnReturned() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/login" { try await gate.pass() }
            return ok(request.path ?? "")
        }
        let api = HTTPCoordinator(transport: transport)
        let login = api.start(get("a.test", "/login"))
        let profile = api.start(get("a.test", "/profile"), after: [login])
        let feed = api.start(get("a.test", "/feed"), after: [login])
        try await waitUntil("login sent") { transport.requests.count == 1 }
        #expect(!profile.isFinished && !feed.isFinished)
        gate.open()
        #expect(text(try await withHangGuard { try await profile.result }) == "/profile")
        #expect(text(try await withHangGuard { try await feed.result }) == "/feed")
        #expect(transport.requests.first?.path == "/login")
        #expect(transport.requests.count == 3)
    }

    @Test func aFailedDependencyFailsItsDependentsWithoutSendingThem() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/login" { throw URLError(.cannotConnectToHost) }
            return ok()
        }
        let api = HTTPCoordinator(transport: transport, configuration: .init(retry: .never))
        let login = api.start(get("a.test", "/login"))
        let profile = api.start(get("a.test", "/profile"), after: [login])
        let error = await #expect(throws: HTTPDependencyError.self) {
            try await withHangGuard { try await profile.result }
        }
        #expect(error?.dependency == "GET /login")
        #expect(transport.requests.map(\.path) == ["/login"])
    }

    @Test func finishedHandlesDoNotKeepEachOtherAlive() async throws {
        let api = HTTPCoordinator(transport: ScriptedHTTPTransport { _, _ in ok() })
        struct Weak: Sendable { weak var handle: HTTPRequestHandle? }
        let weakLogin = Locked(Weak())
        var profile: HTTPRequestHandle?
        do {
            let login = api.start(get("a.test", "/login"))
            weakLogin.withLock { $0.handle = login }
            profile = api.start(get("a.test", "/profile"), after: [login])
        }
        let started = profile!
        _ = try await withHangGuard { try await started.result }
        // The profile's task ended and released the login handle it waited for.
        try await waitUntil("login released") { weakLogin.withLock { $0.handle == nil } }
        #expect(started.isFinished)
    }

    @Test func cancellingAHandleCancelsItsRequest() async throws {
        let transport = ScriptedHTTPTransport { _, _ in
            try await AsyncEvent().wait()  // never answers; ends when cancelled
            return ok()
        }
        let api = HTTPCoordinator(transport: transport, configuration: .init(requestTimeout: nil, retry: .never))
        let slow = api.start(get("a.test", "/slow"))
        try await waitUntil("sent") { transport.inFlight == 1 }
        slow.cancel()
        await #expect(throws: CancellationError.self) { try await withHangGuard { try await slow.result } }
    }
}

@Suite("HTTPCoordinator batches", .timeLimit(.minutes(1)), .takesTurns)
struct HTTPBatchTests {
    @Test func aBatchReturnsResponsesInInputOrderAndReportsProgress() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            for _ in 0..<Int.random(in: 0...20) { await Task.yield() }  // out-of-order completions
            return ok(request.path ?? "")
        }
        let api = HTTPCoordinator(transport: transport, configuration: .init(maxConcurrentRequests: 4))
        let reports = EventLog<HTTPBatchProgress>()
        let results = try await api.data(for: (0..<50).map { get("a.test", "/\($0)") }) { reports.append($0) }
        #expect(results.map(text) == (0..<50).map { "/\($0)" })
        #expect(Set(reports.events.map(\.completed)) == Set(1...50))
        #expect(reports.events.allSatisfy { $0.total == 50 })
        #expect(transport.peakInFlight <= 4)
    }

    @Test func aFailFastBatchThrowsTheFirstErrorAndACollectAllBatchKeepsEveryOutcome() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/3" { throw URLError(.cannotConnectToHost) }
            return ok(request.path ?? "")
        }
        let api = HTTPCoordinator(transport: transport, configuration: .init(retry: .never))
        let requests = (0..<6).map { get("a.test", "/\($0)") }
        await #expect(throws: URLError.self) { try await api.data(for: requests) }
        let outcomes = await api.results(for: requests)
        #expect(outcomes.count == 6)
        #expect(
            outcomes.enumerated().allSatisfy { index, outcome in
                if case .success(let result) = outcome { return index != 3 && text(result) == "/\(index)" }
                return index == 3
            })
    }

    @Test func aBatchDeadlineCancelsWhatIsLeft() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/slow" { try await AsyncEvent().wait() }  // never answers; ends when cancelled
            return ok(request.path ?? "")
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: .never), clock: clock)
        let batch = Task {
            await api.results(for: [get("a.test", "/fast"), get("a.test", "/slow")], deadline: .seconds(10))
        }
        try await waitUntil("slow in flight") { transport.inFlight == 1 && transport.requests.count == 2 }
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(10))
        let outcomes = try await withHangGuard { await batch.value }
        #expect((try? outcomes[0].get()).map(text) == "/fast")
        #expect(
            {
                if case .failure(let error as TimeoutError) = outcomes[1] { return error.timeout == .seconds(10) }
                return false
            }())
    }

    @Test func aFailFastBatchThrowsTimeoutErrorAtItsDeadline() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { _, _ in
            try await AsyncEvent().wait()  // never answers; ends when cancelled
            return ok()
        }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: .never), clock: clock)
        let batch = Task { try await api.data(for: [get("a.test", "/1"), get("a.test", "/2")], deadline: .seconds(5)) }
        try await waitUntil("both in flight") { transport.inFlight == 2 }
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(5))
        let error = await #expect(throws: TimeoutError.self) { try await withHangGuard { try await batch.value } }
        #expect(error?.timeout == .seconds(5))
        #expect(api.inFlight.now == 0)
    }
}
