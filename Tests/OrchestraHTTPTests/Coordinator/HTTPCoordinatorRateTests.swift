import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// Rates of an `HTTPCoordinator` on a `ManualClock`: exact start instants, hosts that do not
/// hold each other back, the server's 429/`Retry-After` pausing a whole host, and its
/// `RateLimit` fields lowering a host's rate.
@Suite("HTTPCoordinator rates", .timeLimit(.minutes(1)), .takesTurns)
struct HTTPCoordinatorRateTests {
    /// A transport that records, for each request, its path and the instant it arrived, and
    /// answers with `answer`.
    final class Recorder: Sendable {
        let clock: ManualClock
        let arrivals = Locked<[(String, Duration)]>([])
        let transport: ScriptedHTTPTransport

        init(
            clock: ManualClock,
            answer: @escaping @Sendable (HTTPRequest) -> (HTTPResponse, Data) = { _ in ok() }
        ) {
            self.clock = clock
            let start = clock.now
            let arrivals = self.arrivals
            transport = ScriptedHTTPTransport { request, _ in
                let at = start.duration(to: clock.now)
                arrivals.withLock { $0.append(("\(request.authority ?? "")\(request.path ?? "")", at)) }
                return answer(request)
            }
        }

        func instants(of prefix: String) -> [Duration] {
            arrivals.withLock { $0.filter { $0.0.hasPrefix(prefix) }.map(\.1) }
        }

        var count: Int { arrivals.withLock { $0.count } }
    }

    static func configuration(
        rate: Rate? = nil, perHostRate: Rate? = nil, hostRates: [String: Rate] = [:], burst: Int = 1,
        adapts: Bool = true, events: EventLog<HTTPRateEvent>? = nil
    ) -> HTTPCoordinator.Configuration {
        var onRateEvent: (@Sendable (HTTPRateEvent) -> Void)?
        if let events { onRateEvent = { event in events.append(event) } }
        return HTTPCoordinator.Configuration(
            maxConcurrentRequests: 64, maxConcurrentRequestsPerHost: 64, requestTimeout: nil, retry: .never,
            rate: rate, perHostRate: perHostRate, hostRates: hostRates, rateBurst: burst, adaptsToServer: adapts,
            onRateEvent: onRateEvent)
    }

    /// Starts `count` requests to `host`, one after the other has queued.
    static func send(
        _ count: Int, to host: String, through api: HTTPCoordinator, in group: inout ThrowingTaskGroup<Void, any Error>
    ) {
        for index in 0..<count {
            group.addTask { _ = try await api.data(for: get(host, "/\(index)")) }
        }
    }

    @Test func anOverallRateSpacesEveryStartAfterItsBurst() async throws {
        let clock = ManualClock()
        let recorder = Recorder(clock: clock)
        let api = HTTPCoordinator(
            transport: recorder.transport, configuration: Self.configuration(rate: .perSecond(10), burst: 2),
            clock: clock)
        try await withThrowingTaskGroup(of: Void.self) { group in
            Self.send(5, to: "a.test", through: api, in: &group)
            try await waitUntil("the burst went") { recorder.count == 2 }
            for expected in 3...5 {
                try await clock.waitForSleepers(1)
                clock.advanceToNextDeadline()
                try await waitUntil("start \(expected)") { recorder.count == expected }
            }
            try await group.waitForAll()
        }
        #expect(
            recorder.instants(of: "a.test") == [
                .zero, .zero, .milliseconds(100), .milliseconds(200), .milliseconds(300),
            ])
        let figures = try #require(api.hostRates.first)
        #expect(figures.requestsSent == 5 && figures.configuredRate == nil && figures.tooManyRequests == 0)
    }

    @Test func aHostsRateHoldsOnlyThatHost() async throws {
        let clock = ManualClock()
        let recorder = Recorder(clock: clock)
        let api = HTTPCoordinator(
            transport: recorder.transport,
            configuration: Self.configuration(perHostRate: .perSecond(100), hostRates: ["slow.test": .perSecond(2)]),
            clock: clock)
        try await withThrowingTaskGroup(of: Void.self) { group in
            Self.send(3, to: "slow.test", through: api, in: &group)
            Self.send(3, to: "fast.test", through: api, in: &group)
            try await waitUntil("one of each went") {
                recorder.instants(of: "slow").count == 1 && recorder.instants(of: "fast").count == 1
            }
            // The clock moves only once the fast.test request due has reached the transport:
            // fast's driver sleeps again as soon as it grants one, before that request runs.
            for sent in 2...3 {
                try await clock.waitForSleepers(2)  // slow's driver (500 ms), fast's (the next 10 ms)
                clock.advance(by: .milliseconds(10))
                try await waitUntil("fast.test \(sent)") { recorder.instants(of: "fast").count == sent }
            }
            #expect(recorder.instants(of: "slow").count == 1, "slow.test waits for its own rate only")
            clock.advance(by: .milliseconds(480))
            try await waitUntil("slow 2") { recorder.instants(of: "slow").count == 2 }
            try await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(500))
            try await group.waitForAll()
        }
        #expect(recorder.instants(of: "fast") == [.zero, .milliseconds(10), .milliseconds(20)])
        #expect(recorder.instants(of: "slow") == [.zero, .milliseconds(500), .milliseconds(1_000)])
        let figures = Dictionary(uniqueKeysWithValues: api.hostRates.map { ($0.host, $0) })
        #expect(figures["slow.test"]?.configuredRate == .perSecond(2))
        #expect(figures["https://fast.test:443"]?.configuredRate == .perSecond(100))
        #expect(figures["slow.test"]?.requestsSent == 3 && figures["https://fast.test:443"]?.requestsSent == 3)
    }

    /// The issue's case: a 429 with `Retry-After: 2` holds every queued request to that host
    /// for 2 s; requests to another host are not held.
    @Test func a429WithRetryAfterPausesEveryRequestToThatHostOnly() async throws {
        let clock = ManualClock()
        let events = EventLog<HTTPRateEvent>()
        let throttled = Locked(true)
        let recorder = Recorder(clock: clock) { request in
            guard request.authority == "busy.test", throttled.withLock({ $0 }) else { return ok() }
            var response = HTTPResponse(status: .tooManyRequests)
            response.headerFields[.retryAfter] = "2"
            return (response, Data())
        }
        let api = HTTPCoordinator(
            transport: recorder.transport, configuration: Self.configuration(events: events), clock: clock)
        let first = try await api.data(for: get("busy.test", "/first"))
        #expect(first.status == .tooManyRequests, "retries are off: the 429 is the answer")
        throttled.withLock { $0 = false }
        try await withThrowingTaskGroup(of: Void.self) { group in
            Self.send(4, to: "busy.test", through: api, in: &group)
            Self.send(4, to: "other.test", through: api, in: &group)
            try await waitUntil("other.test answered") { recorder.instants(of: "other").count == 4 }
            try await clock.waitForSleepers(1)
            #expect(recorder.instants(of: "busy.test/").count == 1, "only the first, before the pause")
            #expect(clock.pendingSleepers.map(\.offset) == [.seconds(2)])
            clock.advance(by: .milliseconds(1_999))
            #expect(recorder.instants(of: "busy.test/").count == 1)
            clock.advance(by: .milliseconds(1))
            try await group.waitForAll()
        }
        #expect(recorder.instants(of: "busy.test/").dropFirst().allSatisfy { $0 == .seconds(2) })
        #expect(recorder.instants(of: "other").allSatisfy { $0 == .zero })
        #expect(
            events.events == [
                HTTPRateEvent(
                    host: "https://busy.test:443", change: .paused(.seconds(2)), reason: "429 with Retry-After: 2")
            ])
        let busy = try #require(api.hostRates.first { $0.host == "https://busy.test:443" })
        #expect(busy.tooManyRequests == 1 && busy.pauses == 1 && busy.requestsSent == 5)
    }

    @Test func aRetryAfterBeyondTheServerDelayLimitPausesForTheLimitOnly() async throws {
        let clock = ManualClock()
        let events = EventLog<HTTPRateEvent>()
        let recorder = Recorder(clock: clock) { _ in
            var response = HTTPResponse(status: .serviceUnavailable)
            response.headerFields[.retryAfter] = "9223372036854775807"
            return (response, Data())
        }
        let api = HTTPCoordinator(
            transport: recorder.transport, configuration: Self.configuration(events: events), clock: clock)
        _ = try await api.data(for: get("a.test"))
        let second = Task { try await api.data(for: get("a.test", "/2")) }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers.map(\.offset) == [.seconds(30)], "RetryPolicy.never's maximumServerDelay")
        clock.advance(by: .seconds(30))
        _ = try await withHangGuard { try await second.value }
        #expect(events.events.first?.change == .paused(.seconds(30)))
    }

    @Test func manyThrottledAnswersOfOneBurstAreOneEvent() async throws {
        let clock = ManualClock()
        let events = EventLog<HTTPRateEvent>()
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            var response = HTTPResponse(status: .tooManyRequests)
            response.headerFields[.retryAfter] = "5"
            return (response, Data())
        }
        let api = HTTPCoordinator(transport: transport, configuration: Self.configuration(events: events), clock: clock)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                group.addTask { _ = try await api.data(for: get("a.test", "/\(index)")) }
            }
            try await waitUntil("all 8 in flight") { transport.inFlight == 8 }
            gate.open()
            try await group.waitForAll()
        }
        #expect(events.events.map(\.change) == [.paused(.seconds(5))], "the 429s of one burst say nothing new")
        #expect(api.hostRates.first?.tooManyRequests == 8)
        #expect(api.hostRates.first?.pauses == 1)
    }

    /// `RateLimit` fields lower a host's rate so that the quota is never exceeded, and each
    /// change is an event; the configured rate is never exceeded.
    @Test(
        arguments: [
            // (fields, configured, expected rate)
            (
                [("RateLimit-Policy", "\"default\";q=10;w=1"), ("RateLimit", "\"default\";r=10;t=1")], nil,
                Rate.per(10, .seconds(1))
            ),
            (
                [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "20"), ("X-RateLimit-Reset", "4")], nil,
                Rate.per(20, .seconds(4))
            ),
            (
                [("RateLimit-Limit", "100"), ("RateLimit-Remaining", "50"), ("RateLimit-Reset", "10")],
                Rate.perSecond(2), Rate.perSecond(2)
            ),
        ] as [([(String, String)], Rate?, Rate)])
    func rateLimitFieldsLowerTheHostsRate(fields: [(String, String)], configured: Rate?, expected: Rate) async throws {
        let clock = ManualClock()
        let events = EventLog<HTTPRateEvent>()
        let recorder = Recorder(clock: clock) { _ in
            var response = HTTPResponse(status: .ok)
            for (name, value) in fields { response.headerFields[HTTPField.Name(name)!] = value }
            return (response, Data())
        }
        let api = HTTPCoordinator(
            transport: recorder.transport,
            configuration: Self.configuration(hostRates: configured.map { ["a.test": $0] } ?? [:], events: events),
            clock: clock)
        _ = try await api.data(for: get("a.test", "/0"))
        let figures = try #require(api.hostRates.first)
        #expect(figures.effectiveRate == expected)
        #expect(figures.configuredRate == configured)
        if configured == nil {
            #expect(events.events.map(\.change) == [.rateChanged(from: nil, to: expected)])
            #expect(events.events.first?.reason.contains(fields[0].1) == true)
        } else {
            #expect(events.events.isEmpty, "never raised above the configured rate")
        }
        // The next two are spaced by the new rate: each waits for its permit, if it must.
        for (index, path) in ["/1", "/2"].enumerated() {
            let request = Task { try await api.data(for: get("a.test", path)) }
            try await waitUntil("\(path) sent") {
                if clock.sleeperCount > 0 { clock.advanceToNextDeadline() }
                return recorder.count == index + 2
            }
            _ = try await withHangGuard { try await request.value }
        }
        let instants = recorder.instants(of: "a.test")
        #expect(instants[2] - instants[1] == expected.spacing)
    }

    @Test func anExhaustedQuotaPausesUntilItsReset() async throws {
        let clock = ManualClock()
        let events = EventLog<HTTPRateEvent>()
        let recorder = Recorder(clock: clock) { _ in
            var response = HTTPResponse(status: .ok)
            response.headerFields[HTTPField.Name("RateLimit-Policy")!] = "\"hour\";q=100;w=3600"
            response.headerFields[HTTPField.Name("RateLimit")!] = "\"hour\";r=0;t=7"
            return (response, Data())
        }
        let api = HTTPCoordinator(
            transport: recorder.transport, configuration: Self.configuration(events: events), clock: clock)
        _ = try await api.data(for: get("a.test"))
        let next = Task { try await api.data(for: get("a.test", "/next")) }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers.map(\.offset) == [.seconds(7)])
        clock.advance(by: .seconds(7))
        _ = try await withHangGuard { try await next.value }
        #expect(events.events.map(\.change).contains(.paused(.seconds(7))))
    }

    @Test func withoutAdaptingTheServersFieldsChangeNothing() async throws {
        let clock = ManualClock()
        let events = EventLog<HTTPRateEvent>()
        let recorder = Recorder(clock: clock) { _ in
            var response = HTTPResponse(status: .tooManyRequests)
            response.headerFields[.retryAfter] = "5"
            response.headerFields[HTTPField.Name("X-RateLimit-Remaining")!] = "0"
            response.headerFields[HTTPField.Name("X-RateLimit-Reset")!] = "5"
            return (response, Data())
        }
        let api = HTTPCoordinator(
            transport: recorder.transport, configuration: Self.configuration(adapts: false, events: events),
            clock: clock)
        _ = try await api.data(for: get("a.test"))
        // Neither the Retry-After nor the quota fields hold the next request: it goes at once.
        _ = try await withHangGuard { try await api.data(for: get("a.test", "/next")) }
        #expect(events.events.isEmpty)
        #expect(api.hostRates.first?.effectiveRate == nil)
        #expect(api.hostRates.first?.tooManyRequests == 2, "429s are still counted")
    }
}

/// ``HTTPRateLimitHeaders`` reads every family of fields and never trusts their values.
@Suite("RateLimit header fields", .takesTurns)
struct HTTPRateLimitHeadersTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    @Test(
        arguments: [
            // The current draft: structured fields; the lowest rate among policies wins.
            (
                [
                    ("RateLimit-Policy", "\"burst\";q=100;w=60, \"day\";q=1000;w=86400"),
                    ("RateLimit", "\"burst\";r=50;t=30, \"day\";r=5;t=100"),
                ],
                HTTPRateLimitHeaders(quota: 1000, window: .seconds(86_400), remaining: 5, reset: .seconds(100))
            ),
            ([("RateLimit", "default;r=0;t=12")], HTTPRateLimitHeaders(remaining: 0, reset: .seconds(12))),
            // Drafts 5–7.
            (
                [
                    ("RateLimit-Limit", "100"), ("RateLimit-Remaining", "40"), ("RateLimit-Reset", "20"),
                    ("RateLimit-Policy", "100;w=60"),
                ],
                HTTPRateLimitHeaders(quota: 100, window: .seconds(60), remaining: 40, reset: .seconds(20))
            ),
            (
                [("RateLimit", "limit=100, remaining=40, reset=20")],
                HTTPRateLimitHeaders(quota: 100, remaining: 40, reset: .seconds(20))
            ),
            // X-RateLimit: seconds from now, a Unix time (GitHub), a Unix time in milliseconds.
            (
                [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "59"), ("X-RateLimit-Reset", "30")],
                HTTPRateLimitHeaders(quota: 60, remaining: 59, reset: .seconds(30))
            ),
            (
                [
                    ("X-RateLimit-Limit", "5000"), ("X-RateLimit-Remaining", "4999"),
                    ("X-RateLimit-Reset", "1800000900"),
                ],
                HTTPRateLimitHeaders(quota: 5000, remaining: 4999, reset: .seconds(900))
            ),
            (
                [("X-RateLimit-Remaining", "3"), ("X-RateLimit-Reset", "1800000010000")],
                HTTPRateLimitHeaders(remaining: 3, reset: .seconds(10))
            ),
            // Hostile values: saturated or clamped, never a trap.
            (
                [("X-RateLimit-Remaining", "99999999999999999999999"), ("X-RateLimit-Reset", "99999999999999999999")],
                HTTPRateLimitHeaders(remaining: Int.max, reset: .seconds(86_400))
            ),
            (
                [("X-RateLimit-Remaining", "5"), ("X-RateLimit-Reset", "1700000000")],
                HTTPRateLimitHeaders(remaining: 5, reset: .zero)
            ),
        ] as [([(String, String)], HTTPRateLimitHeaders)])
    func fieldsAreRead(pairs: [(String, String)], expected: HTTPRateLimitHeaders) throws {
        var announced = try #require(HTTPRateLimitHeaders(Self.fields(pairs), now: Self.now))
        #expect(!announced.source.isEmpty)
        announced.source = ""
        #expect(announced == expected)
    }

    @Test(arguments: [
        [("X-RateLimit-Remaining", "-1")],
        [("X-RateLimit-Remaining", "ten")],
        [("RateLimit", "\"x\";q=5")],
        [("RateLimit-Policy", "\"x\";q=5")],
        [("Retry-After", "5")],
    ])
    func fieldsThatSayNothingUsableAreIgnored(pairs: [(String, String)]) {
        #expect(HTTPRateLimitHeaders(Self.fields(pairs), now: Self.now) == nil)
    }

    /// The quota over its window when both are known (a steady rate, not one that swings with
    /// each response's count), else what is left over what remains of the window.
    @Test func theSustainableRateIsTheQuotaElseWhatIsLeft() {
        let announced = HTTPRateLimitHeaders(quota: 60, window: .seconds(60), remaining: 2, reset: .seconds(10))
        #expect(announced.sustainableRate == .perMinute(60))
        let github = HTTPRateLimitHeaders(quota: 5000, remaining: 1200, reset: .seconds(1_800))
        #expect(github.sustainableRate == .per(1200, .seconds(1_800)))
        #expect(HTTPRateLimitHeaders(remaining: 0, reset: .seconds(5)).sustainableRate == nil)
        #expect(HTTPRateLimitHeaders(remaining: 0, reset: .seconds(5)).isExhausted)
    }

    @Test(arguments: [
        (Rate.perSecond(20), "20/s"), (Rate.perHour(5000), "5000/h"), (Rate.per(5, .seconds(2)), "2.5/s"),
        (Rate.per(50, .seconds(100)), "30/min"), (Rate.per(1, .seconds(3)), "20/min"),
        (Rate.per(Int.max, .seconds(2)), "4.611686018427388e+18/s"),
    ])
    func ratesAreShownInWords(rate: Rate, text: String) {
        #expect(HTTPRateEvent.text(rate) == text)
    }

    @Test func aLongValueIsShortenedInTheSource() throws {
        let long = String(repeating: "9", count: 500)
        let announced = try #require(
            HTTPRateLimitHeaders(Self.fields([("X-RateLimit-Remaining", "1"), ("X-RateLimit-Limit", "1;" + long)])))
        #expect(announced.source.count < 300)
    }
}
