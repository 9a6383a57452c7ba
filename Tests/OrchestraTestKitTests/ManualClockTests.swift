import OrchestraTestKit
import TestSupport
import Testing

@Suite("ManualClock", .timeLimit(.minutes(1)), .takesTurns)
struct ManualClockTests {
    @Test func sleepersWakeOnlyWhenTimeReachesTheirDeadline() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(2)) }
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleepers == [clock.now.advanced(by: .seconds(2))])

        #expect(clock.advance(by: .seconds(1)) == 0)
        #expect(clock.sleeperCount == 1)
        #expect(clock.advance(by: .seconds(1)) == 1)
        try await sleeper.value
        #expect(clock.pendingSleepers.isEmpty)
        #expect(clock.now.offset == .seconds(2))
    }

    @Test func advanceToNextDeadlineMovesToTheEarliestSleeper() async throws {
        let clock = ManualClock()
        let late = Task { try await clock.sleep(for: .seconds(5)) }
        let early = Task { try await clock.sleep(for: .seconds(3)) }
        try await clock.waitForSleepers(2)

        #expect(clock.advanceToNextDeadline() == 1)
        #expect(clock.now.offset == .seconds(3))
        try await early.value
        #expect(clock.advanceToNextDeadline() == 1)
        #expect(clock.now.offset == .seconds(5))
        try await late.value
        #expect(clock.advanceToNextDeadline() == 0)
    }

    @Test func aSleepWithAPastDeadlineReturnsAtOnce() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(10))
        try await clock.sleep(until: .init(offset: .seconds(3)))
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellingASleeperRemovesItAndThrows() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        try await clock.waitForSleepers(1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func waitForSleepersFailsInsteadOfHangingWhenNobodySleeps() async throws {
        let clock = ManualClock()
        await #expect(throws: ManualClockError.self) {
            try await clock.waitForSleepers(1, timeout: .milliseconds(50))
        }
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func advancingByANegativeDurationIsAProgrammerErrorNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ManualClock().advance(by: .seconds(-1))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            message.contains("ManualClock.advance(by:): duration must not be negative, got -1.0 seconds"), "\(message)")
    }
}
