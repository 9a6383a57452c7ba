import Orchestra
import TestSupport
import Testing

@Suite("AsyncGate", .timeLimit(.minutes(1)), .takesTurns)
struct AsyncGateTests {
    @Test func aClosedGateHoldsTasksUntilItOpens() async throws {
        let gate = AsyncGate(isOpen: false)
        let passed = EventLog<Int>()
        let tasks = (0..<3).map { index in
            Task {
                try await gate.pass()
                passed.append(index)
            }
        }
        try await waitUntil("three tasks wait at the gate") { gate.waitingCount == 3 }
        #expect(passed.count == 0)
        gate.open()
        for task in tasks { try await task.value }
        #expect(Set(passed.events) == [0, 1, 2])

        gate.close()
        #expect(!gate.isOpen)
        let late = Task { try await gate.pass() }
        try await waitUntil("a task waits at the closed gate again") { gate.waitingCount == 1 }
        gate.open()
        try await late.value
    }

    @Test func anOpenGateLetsEvenACancelledTaskPass() async throws {
        let gate = AsyncGate()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await gate.pass()
        }
        try await task.value
    }

    @Test func aCancelledTaskLeavesTheClosedGate() async throws {
        let gate = AsyncGate(isOpen: false)
        let waiter = Task { try await gate.pass() }
        try await waitUntil("the waiter is queued") { gate.waitingCount == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(gate.waitingCount == 0)
    }
}
