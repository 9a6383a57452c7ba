import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@Suite("withRetry and RetryPolicy", .timeLimit(.minutes(1)), .takesTurns)
struct RetryTests {
    /// Fails the first `failures` calls, then returns the attempt number.
    final class Flaky: Sendable {
        private let calls = Locked(0)
        let failures: Int
        let error: any Error & Sendable

        init(failures: Int, error: any Error & Sendable = TestError("flaky")) {
            self.failures = failures
            self.error = error
        }

        var callCount: Int { calls.withLock { $0 } }

        func call() throws -> Int {
            let attempt = calls.withLock {
                $0 += 1
                return $0
            }
            if attempt <= failures { throw error }
            return attempt
        }
    }

    @Test func retriesWithExponentialBackoffUntilItSucceeds() async throws {
        let clock = ManualClock()
        let flaky = Flaky(failures: 2)
        let retries = EventLog<Duration>()
        let policy = RetryPolicy(maxAttempts: 4, initialDelay: .milliseconds(100), multiplier: 2, jitter: 0)
        let work = Task {
            try await withRetry(policy, clock: clock, onRetry: { retries.append($0.delay) }) { try flaky.call() }
        }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .milliseconds(100))])
        clock.advanceToNextDeadline()
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .milliseconds(300))])
        clock.advanceToNextDeadline()
        #expect(try await work.value == 3)
        #expect(retries.events == [.milliseconds(100), .milliseconds(200)])
    }

    @Test func stopsAfterMaxAttemptsAndThrowsTheLastError() async throws {
        let clock = ManualClock()
        let flaky = Flaky(failures: 10)
        let policy = RetryPolicy(maxAttempts: 3, initialDelay: .seconds(1), jitter: 0)
        let work = Task { try await withRetry(policy, clock: clock) { try flaky.call() } }
        for _ in 0..<2 {
            try await clock.waitForSleepers(1)
            clock.advanceToNextDeadline()
        }
        await #expect(throws: TestError("flaky")) { try await work.value }
        #expect(flaky.callCount == 3)
    }

    @Test func anErrorThatIsNotRetryableIsThrownAtOnce() async throws {
        let flaky = Flaky(failures: 5, error: TestError("bad request"))
        let policy = RetryPolicy(maxAttempts: 5, isRetryable: { ($0 as? TestError)?.name != "bad request" })
        await #expect(throws: TestError("bad request")) {
            try await withRetry(policy, clock: ManualClock()) { try flaky.call() }
        }
        #expect(flaky.callCount == 1)
    }

    @Test func cancellationDuringABackoffStopsAtOnce() async throws {
        let clock = ManualClock()
        let flaky = Flaky(failures: 10)
        let work = Task { try await withRetry(.init(maxAttempts: 5, jitter: 0), clock: clock) { try flaky.call() } }
        try await clock.waitForSleepers(1)
        work.cancel()
        await #expect(throws: CancellationError.self) { try await work.value }
        #expect(flaky.callCount == 1)
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func aServerGivenDelayReplacesTheBackoff() async throws {
        struct RateLimited: Error { var retryAfter: Duration }
        let clock = ManualClock()
        let flaky = Flaky(failures: 1, error: RateLimited(retryAfter: .seconds(42)))
        let policy = RetryPolicy(
            maxAttempts: 2, initialDelay: .milliseconds(100), maximumServerDelay: .seconds(60),
            serverDelay: { ($0 as? RateLimited)?.retryAfter })
        let work = Task { try await withRetry(policy, clock: clock) { try flaky.call() } }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(42))])
        clock.advanceToNextDeadline()
        #expect(try await work.value == 2)
    }

    @Test func backoffGrowsAndIsCappedAtMaxDelay() {
        let policy = RetryPolicy(
            maxAttempts: 10, initialDelay: .milliseconds(100), multiplier: 3, maxDelay: .seconds(2), jitter: 0)
        let delays = (1...5).map { policy.backoff(afterAttempt: $0) }
        #expect(delays == [.milliseconds(100), .milliseconds(300), .milliseconds(900), .seconds(2), .seconds(2)])
    }

    /// After ~1,025 attempts the exponential factor overflows a Double; the backoff must
    /// saturate at its cap (or stay zero with no initial delay) instead of trapping.
    @Test func backoffSaturatesAfterThousandsOfAttempts() {
        let zero = RetryPolicy(maxAttempts: 5_000, initialDelay: .zero, jitter: 0)
        #expect([1, 1_025, 1_100, 5_000].map { zero.backoff(afterAttempt: $0) } == Array(repeating: .zero, count: 4))
        let capped = RetryPolicy(
            maxAttempts: 5_000, initialDelay: .seconds(1), maxDelay: .seconds(30), jitter: 1, randomSource: .seeded(7))
        #expect(capped.backoff(afterAttempt: 1_100) == .seconds(30))
        #expect(capped.delay(afterAttempt: 4_999, error: TestError("x")) <= .seconds(30))
        // A cap beyond what nanoseconds in an Int64 can hold still gives a finite delay.
        let huge = RetryPolicy(
            maxAttempts: 100, initialDelay: .seconds(1_000_000_000), maxDelay: .seconds(Int64.max / 2), jitter: 0)
        #expect(huge.backoff(afterAttempt: 5) > .seconds(1_000_000_000))
    }

    @Test(arguments: [1 as UInt64, 99, 12345])
    func seededJitterIsReproducibleAndStaysInItsRange(seed: UInt64) {
        func delays(_ source: RandomSource) -> [Duration] {
            let policy = RetryPolicy(
                maxAttempts: 8, initialDelay: .seconds(1), maxDelay: .seconds(100), jitter: 0.5, randomSource: source)
            return (1...7).map { policy.delay(afterAttempt: $0, error: TestError("x")) }
        }
        let first = delays(.seeded(seed))
        #expect(first == delays(.seeded(seed)))
        for (index, delay) in first.enumerated() {
            let full = Duration.seconds(1 << index)
            #expect(delay <= full && delay >= full / 2, "attempt \(index + 1): \(delay) outside [\(full / 2), \(full)]")
        }
        #expect(first.enumerated().contains { $0.element != .seconds(1 << $0.offset) }, "jitter changed nothing")
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func invalidPoliciesAreProgrammerErrorsNamingTheParameter() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(maxAttempts: 0)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("RetryPolicy(maxAttempts:): must be at least 1, got 0"))
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func everyOtherInvalidParameterIsAProgrammerErrorNamingItAndTheValue()
        async
    {
        let delay = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(initialDelay: .seconds(-1))
        }
        let delayMessage = String(decoding: delay?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            delayMessage.contains("RetryPolicy(initialDelay:): must not be negative, got -1.0 seconds"),
            "\(delayMessage)")
        let multiplier = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(multiplier: 0.5)
        }
        let multiplierMessage = String(decoding: multiplier?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            multiplierMessage.contains("RetryPolicy(multiplier:): must be at least 1, got 0.5"), "\(multiplierMessage)")
        let maxDelay = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(maxDelay: .seconds(-2))
        }
        let maxDelayMessage = String(decoding: maxDelay?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            maxDelayMessage.contains("RetryPolicy(maxDelay:): must not be negative, got -2.0 seconds"),
            "\(maxDelayMessage)")
        let jitter = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(jitter: 1.5)
        }
        let jitterMessage = String(decoding: jitter?.standardErrorContent ?? [], as: UTF8.self)
        #expect(jitterMessage.contains("RetryPolicy(jitter:): must be between 0 and 1, got 1.5"), "\(jitterMessage)")
    }
}
