import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraDurable

/// The wait behind a durable worker's loop (its state machine's inputs) and its outcomes' waiters.
@Suite("AwaitedState", .timeLimit(.minutes(1)), .takesTurns)
struct AwaitedStateTests {
    @Test func aWaiterTakesWhatIsThereOrWhatArrivesAndNothingIsLost() async throws {
        let numbers = AwaitedState([Int]())
        numbers.update { $0.append(1) }
        let first = await numbers.wait { state -> [Int]? in
            defer { state.removeAll() }
            return state.isEmpty ? nil : state
        }
        #expect(first == [1], "there already: taken at once")

        // A waiter parks; 500 updates from other tasks: every value reaches it, none twice.
        let producers = Task {
            await withTaskGroup(of: Void.self) { group in
                for value in 2...501 { group.addTask { numbers.update { $0.append(value) } } }
            }
        }
        var seen: [Int] = []
        while seen.count < 500 {
            let batch = await numbers.wait { state -> [Int]? in
                defer { state.removeAll() }
                return state.isEmpty ? nil : state
            }
            seen += try #require(batch)
        }
        await producers.value
        #expect(seen.sorted() == Array(2...501))
    }

    @Test func aCancelledWaiterReturnsNil() async throws {
        let nothing = AwaitedState(0)
        let (parked, parking) = AsyncStream<Void>.makeStream()
        let waiter = Task {
            parking.yield()
            return await nothing.wait { $0 > 0 ? $0 : nil }
        }
        for await _ in parked { break }
        waiter.cancel()
        #expect(await waiter.value == nil)
    }

    @Test func aWaitCancelledInARaceLeavesTheNextWaitWaiting() async throws {
        // An idle worker races its wait for work against a timer; the loser is cancelled. The
        // next wait, by a new task, must still wait for a change, not return at once.
        let signals = AwaitedState(0)
        for round in 1...50 {
            let loser = Task { await signals.wait { $0 >= round ? true : nil } }
            loser.cancel()
            _ = await loser.value
            let (parked, parking) = AsyncStream<Void>.makeStream()
            let next = Task {
                parking.yield()
                return await signals.wait { $0 >= round ? $0 : nil }
            }
            for await _ in parked { break }
            signals.update { $0 += 1 }
            #expect(await next.value == round, "round \(round): the wait returned without a change")
        }
    }
}
