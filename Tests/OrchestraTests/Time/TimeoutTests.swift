import Orchestra
import OrchestraTestKit
import Testing

@Suite("withTimeout and withDeadline", .timeLimit(.minutes(1)))
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
}
