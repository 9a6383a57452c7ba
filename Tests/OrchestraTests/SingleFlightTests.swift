import Orchestra
import Testing

@Suite("SingleFlight", .timeLimit(.minutes(1)))
struct SingleFlightTests {
    /// A piece of work that runs until released, and counts its executions and cancellations.
    final class Work: Sendable {
        let release = AsyncEvent()
        private let counters = Locked((runs: 0, cancellations: 0))

        var runs: Int { counters.withLock { $0.runs } }
        var cancellations: Int { counters.withLock { $0.cancellations } }

        func run(_ outcome: Result<String, TestError>) async throws -> String {
            counters.withLock { $0.runs += 1 }
            do {
                try await release.wait()
            } catch {
                counters.withLock { $0.cancellations += 1 }
                throw error
            }
            return try outcome.get()
        }
    }

    @Test func concurrentCallersWithOneKeyShareOneExecution() async throws {
        let flight = SingleFlight<String, String>()
        let work = Work()
        let callers = (0..<5).map { _ in
            Task { try await flight.run(key: "avatar") { try await work.run(.success("image")) } }
        }
        try await waitUntil("five callers wait") { flight.waiterCount(for: "avatar") == 5 }
        work.release.signal()
        for caller in callers { #expect(try await caller.value == "image") }
        #expect(work.runs == 1)
        #expect(flight.keysInFlight == 0)
    }

    @Test func everyCallerGetsTheSharedError() async throws {
        let flight = SingleFlight<Int, String>()
        let work = Work()
        let callers = (0..<3).map { _ in
            Task { try await flight.run(key: 1) { try await work.run(.failure(TestError("404"))) } }
        }
        try await waitUntil("three callers wait") { flight.waiterCount(for: 1) == 3 }
        work.release.signal()
        for caller in callers {
            await #expect(throws: TestError("404")) { try await caller.value }
        }
        #expect(work.runs == 1)
    }

    @Test func differentKeysRunSeparately() async throws {
        let flight = SingleFlight<Int, Int>()
        async let a = flight.run(key: 1) { 10 }
        async let b = flight.run(key: 2) { 20 }
        #expect(try await [a, b] == [10, 20])
    }

    @Test func aCancelledCallerLeavesWhileTheOthersKeepTheWork() async throws {
        let flight = SingleFlight<String, String>()
        let work = Work()
        let leaving = Task { try await flight.run(key: "k") { try await work.run(.success("v")) } }
        let staying = Task { try await flight.run(key: "k") { try await work.run(.success("v")) } }
        try await waitUntil("two callers wait") { flight.waiterCount(for: "k") == 2 }
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(flight.waiterCount(for: "k") == 1)
        work.release.signal()
        #expect(try await staying.value == "v")
        #expect(work.cancellations == 0)
    }

    @Test func theWorkIsCancelledWhenEveryCallerHasLeftAndTheNextCallerStartsAfresh() async throws {
        let flight = SingleFlight<String, String>()
        let work = Work()
        let callers = (0..<2).map { _ in
            Task { try await flight.run(key: "k") { try await work.run(.success("v")) } }
        }
        try await waitUntil("two callers wait") { flight.waiterCount(for: "k") == 2 }
        for caller in callers { caller.cancel() }
        for caller in callers {
            await #expect(throws: CancellationError.self) { try await caller.value }
        }
        try await waitUntil("the shared work saw its cancellation") { work.cancellations == 1 }
        #expect(flight.keysInFlight == 0)

        let fresh = Work()
        fresh.release.signal()
        #expect(try await flight.run(key: "k") { try await fresh.run(.success("again")) } == "again")
        #expect(fresh.runs == 1)
    }
}
