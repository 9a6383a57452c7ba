import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

@Suite("withTimeout and withDeadline", .timeLimit(.minutes(1)), .takesTurns)
struct TimeoutTests {
    @Test func returnsTheValueWhenTheBodyFinishesInTime() async throws {
        let clock = ManualClock()
        let value = try await withTimeout(.seconds(5), clock: clock) { 7 }
        #expect(value == 7)
        #expect(clock.pendingSleepers.isEmpty, "the timer was cancelled and removed")
    }

    @Test func throwsATimeoutErrorNamingTheDurationAndCancelsTheBody() async throws {
        let clock = ManualClock()
        let bodySawCancellation = AsyncEvent()
        let work = Task {
            try await withTimeout(.seconds(5), clock: clock) {
                do {
                    try await clock.sleep(for: .seconds(60))
                } catch is CancellationError {
                    bodySawCancellation.signal()
                    throw CancellationError()
                }
                return 1
            }
        }
        try await clock.waitForSleepers(2)  // the body and the timer
        clock.advance(by: .seconds(5))
        let error = await #expect(throws: TimeoutError.self) { try await work.value }
        #expect(error?.code == .timedOut)
        #expect(error?.timeout == .seconds(5))
        #expect(error?.description == "timed out after 5.0 seconds")
        #expect(bodySawCancellation.isSignalled)
        #expect(clock.pendingSleepers.isEmpty)
    }

    /// The body finishes at the very instant of the deadline: its result is already there and
    /// is returned, not thrown away.
    @Test func aResultThatArrivesAtTheDeadlineWins() async throws {
        let clock = ManualClock()
        let work = Task {
            try await withTimeout(.seconds(5), clock: clock) {
                try await clock.sleep(for: .seconds(5))
                return "done"
            }
        }
        try await clock.waitForSleepers(2)
        #expect(clock.advance(by: .seconds(5)) == 2)
        #expect(try await work.value == "done")
    }

    @Test func theBodysErrorIsThrownAsIs() async throws {
        let clock = ManualClock()
        await #expect(throws: TestError("refused")) {
            try await withTimeout(.seconds(5), clock: clock) { () async throws -> Int in
                throw TestError("refused")
            }
        }
    }

    @Test func cancellingTheCallerCancelsTheBodyAndTheTimer() async throws {
        let clock = ManualClock()
        let work = Task {
            try await withTimeout(.seconds(5), clock: clock) {
                try await clock.sleep(for: .seconds(60))
            }
        }
        try await clock.waitForSleepers(2)
        work.cancel()
        await #expect(throws: CancellationError.self) { try await work.value }
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func aDeadlineIsAnAbsoluteInstant() async throws {
        let clock = ManualClock()
        let deadline = clock.now.advanced(by: .seconds(3))
        clock.advance(by: .seconds(2))
        let work = Task {
            try await withDeadline(deadline, clock: clock) {
                try await clock.sleep(for: .seconds(10))
            }
        }
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: TimeoutError.self) { try await work.value }
        #expect(error?.timeout == nil)
        #expect(error?.description == "did not finish before its deadline")
    }

    // On `ContinuousClock` the caller sleeps on the shared timer and `body` runs in the one
    // child task. These tests use no real time: a deadline far away, or one already passed.

    /// Waits until the task is cancelled, as work that only a cancellation ends.
    private static func untilCancelled() async {
        // A stream nobody writes to: iterating it ends when the task is cancelled.
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        for await _ in stream {}
        continuation.finish()
    }

    @Test func onTheContinuousClockABodyThatEndsInTimeGivesItsValueOrItsError() async throws {
        #expect(try await withTimeout(.seconds(3_600)) { 7 } == 7)
        await #expect(throws: TestError("refused")) {
            try await withTimeout(.seconds(3_600)) { () async throws -> Int in throw TestError("refused") }
        }
        // Many in a row: each one's sleeper is woken by its body and leaves the timer.
        for index in 0..<200 {
            #expect(try await withDeadline(.now + .seconds(3_600)) { index } == index)
        }
    }

    @Test func onTheContinuousClockAPassedDeadlineCancelsTheBodyAndThrowsTimeoutError() async throws {
        let sawCancellation = Locked(false)
        let error = await #expect(throws: TimeoutError.self) {
            try await withTimeout(.zero) { () async throws -> Int in
                await Self.untilCancelled()
                sawCancellation.withLock { $0 = Task.isCancelled }
                throw CancellationError()
            }
        }
        #expect(error?.timeout == .zero)
        #expect(sawCancellation.withLock { $0 })
        // A body that returns all the same: its value is kept.
        #expect(try await withTimeout(.zero) { 5 } == 5)
    }

    @Test func onTheContinuousClockCancellingTheCallerCancelsTheBody() async throws {
        let (started, starting) = AsyncStream<Void>.makeStream()
        let work = Task {
            try await withTimeout(.seconds(3_600)) { () async throws -> Int in
                starting.yield()
                await Self.untilCancelled()
                throw CancellationError()
            }
        }
        for await _ in started { break }
        work.cancel()
        await #expect(throws: CancellationError.self) { try await work.value }

        // A body that answers cancellation with its own error: that error.
        let (started2, starting2) = AsyncStream<Void>.makeStream()
        let refusing = Task {
            try await withTimeout(.seconds(3_600)) { () async throws -> Int in
                starting2.yield()
                await Self.untilCancelled()
                throw TestError("stopped")
            }
        }
        for await _ in started2 { break }
        refusing.cancel()
        await #expect(throws: TestError("stopped")) { try await refusing.value }
    }
}
