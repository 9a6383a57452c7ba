import Orchestra
import TestSupport
import Testing

@Suite("SingleFlight", .timeLimit(.minutes(1)), .takesTurns)
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

    /// Key 2 runs its own work while key 1's is still in flight: merged keys would run once
    /// and give both callers key 1's value, or make key 2 wait for key 1.
    @Test func differentKeysRunSeparately() async throws {
        let flight = SingleFlight<String, String>()
        let first = Work()
        let second = Work()
        try await withHangGuard {
            let one = Task { try await flight.run(key: "1") { try await first.run(.success("one")) } }
            try await waitUntil("key 1 in flight") { first.runs == 1 }
            second.release.signal()
            #expect(
                try await flight.run(key: "2") { try await second.run(.success("two")) } == "two",
                "key 2 did not wait for key 1")
            #expect(flight.waiterCount(for: "1") == 1, "key 1 still in flight")
            first.release.signal()
            #expect(try await one.value == "one")
        }
        #expect(first.runs == 1 && second.runs == 1)
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
