import OrchestraTestKit
import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

@Suite("AsyncSemaphore", .timeLimit(.minutes(1)), .takesTurns)
struct AsyncSemaphoreTests {
    @Test func tryWaitTakesAvailablePermitsOnly() {
        let semaphore = AsyncSemaphore(value: 2)
        #expect(semaphore.tryWait())
        #expect(semaphore.tryWait())
        #expect(!semaphore.tryWait())
        semaphore.signal()
        #expect(semaphore.availablePermits == 1)
        #expect(semaphore.tryWait())
    }

    @Test func waitSuspendsUntilSignalled() async throws {
        let semaphore = AsyncSemaphore(value: 0)
        let waiter = Task { try await semaphore.wait() }
        try await waitUntil("the waiter is queued") { semaphore.waitingCount == 1 }
        semaphore.signal()
        try await waiter.value
        #expect(semaphore.availablePermits == 0)
        #expect(semaphore.waitingCount == 0)
    }

    @Test func waitersAreServedFirstInFirstOut() async throws {
        let semaphore = AsyncSemaphore(value: 0)
        let served = EventLog<Int>()
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<8 {
            waiters.append(
                Task {
                    try await semaphore.wait()
                    served.append(index)
                })
            try await waitUntil("waiter \(index) is queued") { semaphore.waitingCount == index + 1 }
        }
        for round in 0..<8 {
            semaphore.signal()
            try await waitUntil("waiter \(round) is served") { served.count == round + 1 }
        }
        for waiter in waiters { try await waiter.value }
        #expect(served.events == Array(0..<8))
    }

    @Test func aCancelledWaiterThrowsAndTakesNoPermit() async throws {
        let semaphore = AsyncSemaphore(value: 0)
        let waiter = Task { try await semaphore.wait() }
        try await waitUntil("the waiter is queued") { semaphore.waitingCount == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(semaphore.waitingCount == 0)
        semaphore.signal()
        #expect(semaphore.availablePermits == 1, "the permit went to nobody, so it must still be there")
    }

    @Test func anAlreadyCancelledTaskDoesNotTakeAFreePermit() async throws {
        let semaphore = AsyncSemaphore(value: 1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await semaphore.wait()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(semaphore.availablePermits == 1)
    }

    @Test func withPermitReturnsThePermitWhenTheBodyThrows() async throws {
        let semaphore = AsyncSemaphore(value: 1)
        await #expect(throws: TestError("boom")) {
            try await semaphore.withPermit { throw TestError("boom") }
        }
        #expect(semaphore.availablePermits == 1)
        let value = try await semaphore.withPermit { 42 }
        #expect(value == 42)
        #expect(semaphore.availablePermits == 1)
    }

    @Test func withPermitBoundsConcurrency() async throws {
        let semaphore = AsyncSemaphore(value: 3)
        let probe = ConcurrencyProbe()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await semaphore.withPermit {
                        await probe.measure { await Task.yield() }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(probe.maximum <= 3)
        #expect(semaphore.availablePermits == 3)
    }

    /// Thousands of waiters, half of them cancelled while signals arrive concurrently: every
    /// permit signalled is either held by a waiter that returned or still available.
    @Test(arguments: [0 as UInt64, 1, 2])
    func racingCancelsAndSignalsNeverLoseOrDuplicatePermits(seed: UInt64) async throws {
        let waiterCount = 2_000
        let stormSignals = 1_000
        let semaphore = AsyncSemaphore(value: 0)
        var waiters: [Task<Bool, Never>] = []
        for _ in 0..<waiterCount {
            waiters.append(
                Task {
                    do {
                        try await semaphore.wait()
                        return true
                    } catch {
                        return false
                    }
                })
        }
        let cancelOrder = Array(stride(from: 0, to: waiterCount, by: 2))
        let started = waiters
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var generator = SplitMix64(seed: seed)
                for index in cancelOrder.shuffled(using: &generator) { started[index].cancel() }
            }
            group.addTask {
                for _ in 0..<stormSignals { semaphore.signal() }
            }
        }
        // Enough permits for every waiter that may still be queued: all of them end.
        for _ in 0..<waiterCount { semaphore.signal() }
        var acquired = 0
        for waiter in waiters where await waiter.value { acquired += 1 }
        #expect(acquired + semaphore.availablePermits == stormSignals + waiterCount)
        #expect(semaphore.waitingCount == 0)
        #expect(acquired >= waiterCount / 2, "the waiters never cancelled must all get a permit")
    }

    /// Eight tasks share one permit, thousands of times each: the fast path (one atomic
    /// operation) and the slow path (queue, hand-over) interleave on every core, and still at
    /// most one task holds the permit and it is back at the end.
    @Test func contendedPermitsStayExclusiveAndComeBack() async throws {
        let semaphore = AsyncSemaphore(value: 1)
        let probe = ConcurrencyProbe()
        let entries = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<2_000 {
                        try await semaphore.withPermit {
                            probe.enter()
                            entries.withLock { $0 += 1 }
                            probe.leave()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(probe.maximum == 1)
        #expect(entries.withLock { $0 } == 16_000)
        #expect(semaphore.availablePermits == 1)
        #expect(semaphore.waitingCount == 0)
    }

    @Test(.enabled(if: ExitTests.areEnabled)) func aNegativeValueIsAProgrammerErrorNamingTheValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AsyncSemaphore(value: -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("AsyncSemaphore(value:): value must be 0 or more, got -1"))
    }
}
