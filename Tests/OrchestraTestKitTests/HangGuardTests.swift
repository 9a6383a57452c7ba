import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@Suite("withHangGuard", .timeLimit(.minutes(1)), .takesTurns)
struct HangGuardTests {
    @Test func theGuardGivesUpByItselfOnABodyThatIgnoresCancellation() async throws {
        let clock = ManualClock()
        let release = AsyncEvent()
        // Awaiting another task's value ignores cancellation: the hang the guard must report.
        let stuck = Task { try? await release.wait() }
        let guarded = Task { try await withHangGuard(.seconds(60), clock: clock) { await stuck.value } }
        try await clock.waitForSleepers(1)
        _ = clock.advance(by: .seconds(60))
        let error = await #expect(throws: HangGuardExpired.self) { try await guarded.value }
        #expect(error?.limit == .seconds(60))
        release.signal()
        await stuck.value
    }

    @Test func aBodyThatEndsInTimeGivesItsResultAndStopsTheGuard() async throws {
        let clock = ManualClock()
        let value = try await withHangGuard(clock: clock) { 42 }
        #expect(value == 42)
        try await waitUntil("the guard's sleep ended") { clock.sleeperCount == 0 }
        await #expect(throws: CancellationError.self) {
            try await withHangGuard(clock: clock) { throw CancellationError() }
        }
    }

    @Test func cancellingTheCallerCancelsTheBody() async throws {
        let clock = ManualClock()
        let started = AsyncEvent()
        let bodyCancelled = AsyncEvent()
        let guarded = Task {
            try await withHangGuard(clock: clock) {
                started.signal()
                do { try await AsyncEvent().wait() } catch { bodyCancelled.signal() }
            }
        }
        try await started.wait()
        guarded.cancel()
        await #expect(throws: CancellationError.self) { try await guarded.value }
        try await withHangGuard { try await bodyCancelled.wait() }
    }
}
