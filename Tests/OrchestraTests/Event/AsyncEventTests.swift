import Orchestra
import TestSupport
import Testing

@Suite("AsyncEvent", .timeLimit(.minutes(1)), .takesTurns)
struct AsyncEventTests {
    @Test func anEventReleasesEveryWaiterAndLaterWaitsPassAtOnce() async throws {
        let event = AsyncEvent()
        let waiters = (0..<5).map { _ in Task { try await event.wait() } }
        try await waitUntil("five waiters") { event.waitingCount == 5 }
        #expect(!event.isSignalled)
        event.signal()
        for waiter in waiters { try await waiter.value }
        try await event.wait()
        event.signal()
        #expect(event.isSignalled)
    }

    @Test func aCancelledEventWaiterThrows() async throws {
        let event = AsyncEvent()
        let waiter = Task { try await event.wait() }
        try await waitUntil("the waiter is queued") { event.waitingCount == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(event.waitingCount == 0)
    }
}
