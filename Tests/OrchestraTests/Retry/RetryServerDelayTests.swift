import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

/// A delay a failure asks for (`Retry-After`) is outside input: compared with
/// `maximumServerDelay` before any arithmetic, never slept beyond it, never trapping.
@Suite("RetryPolicy.maximumServerDelay", .timeLimit(.minutes(1)), .takesTurns)
struct RetryServerDelayTests {
    struct Busy: Error { var retryAfter: Duration }

    /// Fails with `Busy(retryAfter: delay)` until its `failures` are used up.
    final class Server: Sendable {
        private let calls = Locked(0)
        let failures: Int
        let delay: Duration

        init(failures: Int = 1, delay: Duration) {
            self.failures = failures
            self.delay = delay
        }

        var callCount: Int { calls.withLock { $0 } }

        func call() throws -> Int {
            let attempt = calls.withLock {
                $0 += 1
                return $0
            }
            if attempt <= failures { throw Busy(retryAfter: delay) }
            return attempt
        }
    }

    static func policy(maximumServerDelay: Duration = .seconds(30)) -> RetryPolicy {
        RetryPolicy(
            maxAttempts: 3, initialDelay: .milliseconds(100), maximumServerDelay: maximumServerDelay, jitter: 0,
            serverDelay: { ($0 as? Busy)?.retryAfter })
    }

    @Test(arguments: [
        Duration.seconds(Int64.max), .seconds(86_400), .seconds(30) + .nanoseconds(1),
        .seconds(Int64.max) * 10,
    ])
    func aDelayOverTheLimitFailsAtOnceWithoutSleeping(requested: Duration) async throws {
        let clock = ManualClock()
        let server = Server(delay: requested)
        let retries = EventLog<RetryEvent>()
        let error = await #expect(throws: RetryError.self) {
            try await withHangGuard {
                try await withRetry(Self.policy(), clock: clock, onRetry: { retries.append($0) }) { try server.call() }
            }
        }
        #expect(error?.code == .serverDelayTooLong)
        #expect(error?.requestedDelay == requested)
        #expect(error?.limit == .seconds(30))
        #expect(error?.attempt == 1)
        #expect((error?.underlying as? Busy)?.retryAfter == requested)
        #expect(server.callCount == 1)
        #expect(retries.events.isEmpty, "no retry is announced")
        #expect(clock.pendingSleepers.isEmpty)
        #expect(clock.now == ManualClock.Instant(offset: .zero))
    }

    @Test func aDelayAtTheLimitIsWaited() async throws {
        let clock = ManualClock()
        let server = Server(delay: .seconds(30))
        let retries = EventLog<Bool>()
        let work = Task {
            try await withRetry(Self.policy(), clock: clock, onRetry: { retries.append($0.isServerDelay) }) {
                try server.call()
            }
        }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(30))])
        clock.advanceToNextDeadline()
        #expect(try await withHangGuard { try await work.value } == 2)
        #expect(retries.events == [true])
    }

    @Test(arguments: [Duration.seconds(-5), .seconds(Int64.min), .seconds(Int64.min) * 10])
    func aNegativeDelayCountsAsZero(requested: Duration) async throws {
        let clock = ManualClock()
        let server = Server(delay: requested)
        let delays = EventLog<Duration>()
        let value = try await withHangGuard {
            try await withRetry(Self.policy(), clock: clock, onRetry: { delays.append($0.delay) }) { try server.call() }
        }
        #expect(value == 2)
        #expect(delays.events == [.zero])
        #expect(Self.policy().delay(afterAttempt: 1, error: Busy(retryAfter: requested)) == .zero)
        #expect(clock.pendingSleepers.isEmpty)
    }

    /// A policy that accepts any delay still sleeps at most 2³² s: a `ContinuousClock`
    /// deadline beyond 2⁶³ ns trapped ("Not enough bits to represent the passed value").
    @Test func anAcceptedHugeDelayIsSleptAsAtMostTwoToTheThirtySecondSeconds() async throws {
        let clock = ManualClock()
        let server = Server(delay: .seconds(Int64.max))
        let work = Task {
            try await withRetry(Self.policy(maximumServerDelay: .seconds(Int64.max)), clock: clock) {
                try server.call()
            }
        }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(1 << 32))])
        work.cancel()
        await #expect(throws: CancellationError.self) { try await work.value }
        #expect(clock.pendingSleepers.isEmpty)
    }

    /// The same on the real clock: the deadline handed to `sleep` is within reach of a
    /// `ContinuousClock` (the sleep itself is not waited: the clock throws instead).
    @Test func theDeadlineOnTheContinuousClockStaysRepresentable() async throws {
        let clock = DeadlineRecordingClock()
        let server = Server(delay: .seconds(Int64.max))
        await #expect(throws: DeadlineRecordingClock.Stop.self) {
            try await withRetry(Self.policy(maximumServerDelay: .seconds(Int64.max)), clock: clock) {
                try server.call()
            }
        }
        let deadline = try #require(clock.deadlines.first)
        #expect(clock.base.now.duration(to: deadline) <= .seconds(1 << 32))
    }

    /// A task graph node's retries follow the same rules: one engine.
    @Test func aGraphNodeWhoseFailureAsksTooMuchFailsWithoutWaiting() async throws {
        let clock = ManualClock()
        let server = Server(failures: 5, delay: .seconds(86_400))
        let graph = TaskGraph()
        let node = graph.add("busy", retry: Self.policy()) { try server.call() }
        let result = try await withHangGuard { try await graph.run(clock: clock) }
        let refusal = try #require(result[node].error as? RetryError, "\(result[node])")
        #expect(refusal.code == .serverDelayTooLong && refusal.requestedDelay == .seconds(86_400))
        #expect(server.callCount == 1)
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func aGraphNodeWaitsADelayWithinTheLimit() async throws {
        let clock = ManualClock()
        let server = Server(failures: 1, delay: .seconds(20))
        let graph = TaskGraph()
        let node = graph.add("busy", retry: Self.policy()) { try server.call() }
        let run = Task { try await graph.run(clock: clock) }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [.init(offset: .seconds(20))])
        clock.advanceToNextDeadline()
        #expect(try await withHangGuard { try await run.value }.value(of: node) == 2)
    }

    @Test func serverDelayErrorAndDelayAgreeWithTheLoop() {
        let policy = Self.policy()
        let over = Busy(retryAfter: .seconds(86_400))
        #expect(policy.serverDelayError(afterAttempt: 2, error: over)?.attempt == 2)
        #expect(policy.delay(afterAttempt: 2, error: over) == .seconds(30), "clamped for a loop that only asks delay")
        #expect(policy.serverDelayError(afterAttempt: 1, error: Busy(retryAfter: .seconds(3))) == nil)
        #expect(policy.serverDelayError(afterAttempt: 1, error: TestError("no delay")) == nil)
        #expect(RetryPolicy().maximumServerDelay == .seconds(30))
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func aNegativeLimitIsAProgrammerErrorNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(maximumServerDelay: .seconds(-1))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            message.contains("RetryPolicy(maximumServerDelay:): must not be negative, got -1.0 seconds"), "\(message)")
    }
}

/// A `ContinuousClock` whose `sleep` records its deadline and throws ``Stop`` instead of
/// sleeping.
final class DeadlineRecordingClock: Clock, Sendable {
    struct Stop: Error {}

    let base = ContinuousClock()
    private let recorded = Locked<[ContinuousClock.Instant]>([])

    var deadlines: [ContinuousClock.Instant] { recorded.withLock { $0 } }
    var now: ContinuousClock.Instant { base.now }
    var minimumResolution: Duration { base.minimumResolution }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        recorded.withLock { $0.append(deadline) }
        throw Stop()
    }
}
