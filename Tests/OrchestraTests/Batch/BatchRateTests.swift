import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

/// Batches with a rate as well as a limit, on a `ManualClock`: the exact instant each element
/// starts, the rate binding and the limit binding, and cancellation while an element waits
/// for its permit.
@Suite("Batch rates", .timeLimit(.minutes(1)), .takesTurns)
struct BatchRateTests {
    struct Start: Sendable, Equatable, CustomStringConvertible {
        var index: Int
        var at: Duration
        var description: String { "#\(index)@\(at)" }
    }

    static func ms(_ milliseconds: Int) -> Duration { .milliseconds(milliseconds) }

    /// Elements that log when they start on `clock`, then wait for the test to release them (or
    /// return at once when `gated` is false).
    final class Elements: Sendable {
        let clock: ManualClock
        let starts = EventLog<Start>()
        let cancelled = EventLog<Int>()
        private let gates: [AsyncEvent]
        private let gated: Bool

        init(_ count: Int, clock: ManualClock, gated: Bool) {
            self.clock = clock
            self.gated = gated
            gates = (0..<count).map { _ in AsyncEvent() }
        }

        func run(_ index: Int) async throws -> Int {
            starts.append(Start(index: index, at: clock.now.offset))
            if gated {
                do {
                    try await gates[index].wait()
                } catch {
                    cancelled.append(index)
                    throw error
                }
            }
            return index * 10
        }

        func release(_ index: Int) { gates[index].signal() }

        func waitForStarts(_ count: Int) async throws {
            try await waitUntil("\(count) elements started") { self.starts.count >= count }
        }
    }

    /// Advances to each deadline the batch's limiter sleeps until, until `count` elements have
    /// started (only the limiter sleeps on the clock: the elements return at once).
    ///
    /// The clock moves only once every element granted so far has started (and logged its
    /// instant): first the `atOnce` granted without waiting (the burst), then one more per
    /// deadline. Waiting for "an element logged at the new instant" instead let a late element
    /// of the burst, logging after the first advance, stand for the one due then; the loop
    /// then went one deadline too far and waited for a sleeper that never came.
    static func drive(_ elements: Elements, until count: Int, atOnce: Int = 1) async throws {
        var granted = atOnce
        try await elements.waitForStarts(granted)
        while granted < count {
            try await elements.clock.waitForSleepers(1)
            elements.clock.advanceToNextDeadline()
            granted += 1
            try await elements.waitForStarts(granted)
        }
    }

    // MARK: - Rate binding

    @Test func concurrentMapStartsEachElementAtItsPermitInInputOrder() async throws {
        let clock = ManualClock()
        let elements = Elements(6, clock: clock, gated: false)
        let batch = Task {
            try await Array(0..<6).concurrentMap(limit: 8, rate: .perSecond(4), burst: 2, clock: clock) {
                try await elements.run($0)
            }
        }
        try await Self.drive(elements, until: 6, atOnce: 2)
        #expect(try await batch.value == [0, 10, 20, 30, 40, 50])
        // The two started together (the burst) may log in either order.
        #expect(
            elements.starts.events.sorted { $0.index < $1.index }
                == zip(0..., [0, 0, 250, 500, 750, 1_000]).map { Start(index: $0, at: Self.ms($1)) })
        #expect(clock.sleeperCount == 0)
    }

    @Test func concurrentResultsStartsEachElementAtItsPermitInInputOrder() async throws {
        let clock = ManualClock()
        let elements = Elements(4, clock: clock, gated: false)
        let batch = Task {
            await Array(0..<4).concurrentResults(limit: 3, rate: .per(1, .seconds(2)), clock: clock) {
                try await elements.run($0)
            }
        }
        try await Self.drive(elements, until: 4)
        #expect(try await batch.value.map { try $0.get() } == [0, 10, 20, 30])
        #expect(
            elements.starts.events == zip(0..., [0, 2, 4, 6]).map { Start(index: $0, at: .seconds($1)) })
    }

    @Test func aNilRateIsTheBatchWithoutARate() async throws {
        let clock = ManualClock()
        let elements = Elements(5, clock: clock, gated: false)
        let mapped = try await Array(0..<5).concurrentMap(limit: 2, rate: nil, clock: clock) {
            try await elements.run($0)
        }
        #expect(mapped == [0, 10, 20, 30, 40])
        #expect(elements.starts.events.allSatisfy { $0.at == .zero })
    }

    // MARK: - Rate and limit together

    /// Limit 2 and 10 a second: the third element waits for a slot (at 1 s, when the first
    /// ends, long after its permit would have been free), the fourth for its permit (100 ms
    /// after the third, though its slot freed with the third's).
    @Test(arguments: [false, true])
    func theLimitOrTheRateBindsWhicheverIsLater(collectsAll: Bool) async throws {
        let clock = ManualClock()
        let elements = Elements(4, clock: clock, gated: true)
        let batch = Task {
            if collectsAll {
                return try await Array(0..<4).concurrentResults(limit: 2, rate: .perSecond(10), clock: clock) {
                    try await elements.run($0)
                }.map { try $0.get() }
            }
            return try await Array(0..<4).concurrentMap(limit: 2, rate: .perSecond(10), clock: clock) {
                try await elements.run($0)
            }
        }
        try await elements.waitForStarts(1)
        try await clock.waitForSleepers(1)  // the second element's permit, due at 100 ms
        clock.advanceToNextDeadline()
        try await elements.waitForStarts(2)
        clock.advance(to: .init(offset: .seconds(1)))
        // No slot is free: nothing waits for a permit, so nothing sleeps.
        await Task.yield()
        #expect(elements.starts.count == 2)
        elements.release(0)
        try await elements.waitForStarts(3)
        elements.release(1)
        try await clock.waitForSleepers(1)  // the fourth element's permit, due at 1.1 s
        #expect(clock.pendingSleepers == [.init(offset: Self.ms(1_100))])
        clock.advanceToNextDeadline()
        try await elements.waitForStarts(4)
        elements.release(2)
        elements.release(3)
        #expect(try await batch.value == [0, 10, 20, 30])
        #expect(
            elements.starts.events == zip(0..., [0, 100, 1_000, 1_100]).map { Start(index: $0, at: Self.ms($1)) })
        #expect(clock.sleeperCount == 0)
    }

    // MARK: - Cancellation

    @Test func cancellingConcurrentMapWhileAnElementWaitsForItsPermitStartsNothingMore() async throws {
        let clock = ManualClock()
        let elements = Elements(5, clock: clock, gated: true)
        let batch = Task {
            try await Array(0..<5).concurrentMap(limit: 4, rate: .perSecond(1), clock: clock) {
                try await elements.run($0)
            }
        }
        try await elements.waitForStarts(1)
        try await clock.waitForSleepers(1)  // the second element waits for its permit
        batch.cancel()
        await #expect(throws: CancellationError.self) { try await batch.value }
        #expect(elements.starts.events == [Start(index: 0, at: .zero)])
        #expect(elements.cancelled.events == [0])
        try await waitUntil("the limiter's sleep is cancelled") { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(10))
        #expect(elements.starts.count == 1)
    }

    @Test func cancellingConcurrentResultsWhileAnElementWaitsRecordsEveryElementNotStarted() async throws {
        let clock = ManualClock()
        let elements = Elements(5, clock: clock, gated: true)
        let batch = Task {
            await Array(0..<5).concurrentResults(limit: 4, rate: .perSecond(1), clock: clock) {
                try await elements.run($0)
            }
        }
        try await elements.waitForStarts(1)
        try await clock.waitForSleepers(1)
        batch.cancel()
        let results = await batch.value
        #expect(results.count == 5)
        for result in results {
            #expect(throws: CancellationError.self) { try result.get() }
        }
        #expect(elements.starts.events == [Start(index: 0, at: .zero)])
        try await waitUntil("the limiter's sleep is cancelled") { clock.sleeperCount == 0 }
    }

    // MARK: - Streams

    @Test func completionsStartAtThePermitsInstants() async throws {
        let clock = ManualClock()
        let elements = Elements(4, clock: clock, gated: false)
        let consumer = Task {
            var indices: [Int] = []
            for await (index, result) in Array(0..<4).completions(
                limit: 2, rate: .perSecond(2), clock: clock, { try await elements.run($0) })
            {
                #expect((try? result.get()) == index * 10)
                indices.append(index)
            }
            return indices.sorted()
        }
        try await Self.drive(elements, until: 4)
        #expect(await consumer.value == [0, 1, 2, 3])
        #expect(elements.starts.events.map(\.at) == [0, 500, 1_000, 1_500].map(Self.ms))
        #expect(Set(elements.starts.events.map(\.index)) == [0, 1, 2, 3])
        #expect(clock.sleeperCount == 0)
    }

    @Test func orderedResultsStartAtThePermitsInstants() async throws {
        let clock = ManualClock()
        let elements = Elements(3, clock: clock, gated: false)
        let consumer = Task {
            var values: [Int] = []
            for await result in Array(0..<3).orderedResults(
                limit: 3, rate: .perMinute(60), clock: clock, { try await elements.run($0) })
            {
                values.append(try result.get())
            }
            return values
        }
        try await Self.drive(elements, until: 3)
        #expect(try await consumer.value == [0, 10, 20])
        #expect(elements.starts.events.map(\.at) == [0, 1, 2].map { Duration.seconds($0) })
    }

    /// An element waiting for its permit counts as running: cancelling the consumer with
    /// `.deliverRunning` delivers its `CancellationError`, and it never starts.
    @Test func cancellingCompletionsDeliversTheElementsWaitingForTheirPermits() async throws {
        let clock = ManualClock()
        let elements = Elements(6, clock: clock, gated: true)
        let received = EventLog<Int>()
        let consumer = Task {
            for await (index, result) in Array(0..<6).completions(
                limit: 3, rate: .perSecond(1), whenCancelled: .deliverRunning, clock: clock,
                { try await elements.run($0) })
            {
                #expect(throws: CancellationError.self) { try result.get() }
                received.append(index)
            }
        }
        try await elements.waitForStarts(1)
        try await clock.waitForSleepers(1)
        // The other workers have taken their element (the third one almost surely: the
        // workers take their first elements in one go) and wait for a permit.
        consumer.cancel()
        await consumer.value
        #expect(received.events.sorted() == Array(0..<received.count))
        #expect(received.count >= 2)
        // Which worker asks first is up to the scheduler.
        #expect(elements.starts.count == 1)
        #expect(elements.starts.events.allSatisfy { $0.at == .zero && received.events.contains($0.index) })
        try await waitUntil("the limiter's sleep is cancelled") { clock.sleeperCount == 0 }
    }
}
