import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// `Retry-After` is outside input: however large, negative or far a date, it never traps,
/// and one over the policy's `maximumServerDelay` fails the request at once, naming it.
@Suite("HTTPCoordinator and Retry-After limits", .timeLimit(.minutes(1)), .takesTurns)
struct RetryAfterLimitTests {
    /// A 503 with `Retry-After: header` on the first attempt, then a 200.
    static func busyOnce(retryAfter header: String) -> ScriptedHTTPTransport {
        let calls = Locked(0)
        return ScriptedHTTPTransport { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            guard call == 1 else { return ok("done") }
            var busy = HTTPResponse(status: .serviceUnavailable)
            busy.headerFields[.retryAfter] = header
            return (busy, Data("busy".utf8))
        }
    }

    static let policy = RetryPolicy(maxAttempts: 3, initialDelay: .seconds(1), jitter: 0)

    @Test(arguments: [
        ("9223372036854775807", Duration.seconds(Int64.max)),
        ("99999999999999999999999999", Duration.seconds(Int64.max)),
        ("86400", Duration.seconds(86_400)),
        ("31", Duration.seconds(31)),
    ])
    func aRetryAfterOverTheLimitFailsAtOnceWithoutSleeping(header: String, requested: Duration) async throws {
        let clock = ManualClock()
        let transport = Self.busyOnce(retryAfter: header)
        let retries = EventLog<HTTPRetryEvent>()
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: Self.policy), clock: clock)
        let error = await #expect(throws: RetryError.self) {
            try await withHangGuard {
                try await api.data(
                    for: get("a.test"), options: HTTPRequestOptions(onRetry: { retries.append($0) }))
            }
        }
        #expect(error?.code == .serverDelayTooLong)
        #expect(error?.requestedDelay == requested)
        #expect(error?.limit == .seconds(30))
        let status = try #require(error?.underlying as? HTTPStatusError, "the response is in the error")
        #expect(status.result.status == .serviceUnavailable)
        #expect(String(decoding: status.result.body, as: UTF8.self) == "busy")
        #expect(transport.requests.count == 1)
        #expect(retries.events.isEmpty)
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func anHTTPDateFarInTheFutureFailsAtOnce() async throws {
        let clock = ManualClock()
        let transport = Self.busyOnce(retryAfter: "Thu, 31 Dec 2099 23:59:59 GMT")
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: Self.policy), clock: clock)
        let error = await #expect(throws: RetryError.self) {
            try await withHangGuard { try await api.data(for: get("a.test")) }
        }
        #expect(try #require(error?.requestedDelay) > .seconds(365 * 24 * 3_600 * 50))
        #expect(transport.requests.count == 1)
        #expect(clock.pendingSleepers.isEmpty)
    }

    /// A negative number is not a `Retry-After` (RFC 9110 §10.2.3): the backoff applies.
    @Test(arguments: ["-5", "-9223372036854775808"])
    func aNegativeRetryAfterIsIgnoredForTheBackoff(header: String) async throws {
        let clock = ManualClock()
        let transport = Self.busyOnce(retryAfter: header)
        let retries = EventLog<Bool>()
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: Self.policy), clock: clock)
        let request = Task {
            try await api.data(
                for: get("a.test"), options: HTTPRequestOptions(onRetry: { retries.append($0.isRetryAfter) }))
        }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(1))], "the policy's backoff")
        clock.advanceToNextDeadline()
        let result = try await withHangGuard { try await request.value }
        #expect(result.status == .ok && result.attempts == 2)
        #expect(retries.events == [false])
    }

    @Test func aRetryAfterWithinTheLimitIsWaitedAndReported() async throws {
        let clock = ManualClock()
        let transport = Self.busyOnce(retryAfter: "30")
        let retries = EventLog<HTTPRetryEvent>()
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: Self.policy), clock: clock)
        let request = Task {
            try await api.data(for: get("a.test", "/x"), options: HTTPRequestOptions(onRetry: { retries.append($0) }))
        }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(30))])
        let event = try #require(retries.events.first)
        #expect(event.isRetryAfter && event.delay == .seconds(30) && event.attempt == 1)
        #expect(event.response?.status == .serviceUnavailable && event.request.path == "/x")
        clock.advanceToNextDeadline()
        #expect(try await withHangGuard { try await request.value }.status == .ok)
    }

    @Test func aLargerLimitLetsALongerRetryAfterThrough() async throws {
        let clock = ManualClock()
        let transport = Self.busyOnce(retryAfter: "86400")
        var policy = Self.policy
        policy.maximumServerDelay = .seconds(100_000)
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(requestTimeout: nil, retry: policy), clock: clock)
        let request = Task { try await api.data(for: get("a.test")) }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(86_400))])
        clock.advanceToNextDeadline()
        #expect(try await withHangGuard { try await request.value }.status == .ok)
    }

    @Test(arguments: [
        ("9223372036854775807", Duration.seconds(Int64.max)),
        ("18446744073709551616", Duration.seconds(Int64.max)),
        ("Fri, 31 Dec 9999 23:59:59 GMT", Duration.milliseconds(Int64(253_402_300_799 - 1_795_370_400) * 1_000)),
        ("Thu, 01 Jan 1970 00:00:00 GMT", Duration.zero),
    ])
    func retryAfterSaturatesInsteadOfOverflowing(header: String, expected: Duration) {
        var response = HTTPResponse(status: .serviceUnavailable)
        response.headerFields[.retryAfter] = header
        let now = Date(timeIntervalSince1970: 1_795_370_400)
        #expect(HTTPCoordinator.retryAfter(response, now: now) == expected)
    }
}
