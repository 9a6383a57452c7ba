import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// The bounded hand-over between a `paginate:` step and the `for_each` step taking its items:
/// however many pages there are, the producer is never more than ``PageChannel/capacity``
/// items and one page ahead of the consumer, and neither end waits for an end that has gone.
@Suite("PageChannel", .timeLimit(.minutes(1)), .takesTurns)
struct PageChannelTests {
    static func page(_ number: Int) -> [JSONValue] {
        (0..<10).map { .integer(number * 10 + $0) }
    }

    @Test func theProducerWaitsOnceCapacityItemsWaitAndGoesOnAsTheyAreTaken() async throws {
        let channel = PageChannel(producer: "list", consumer: "each", capacity: 34)
        let sent = Locked(0)
        let producer = Task {
            for number in 0..<100 {
                try await channel.send(Self.page(number))
                sent.withLock { $0 += 1 }
            }
            channel.finish()
        }
        // Pages 1–3 (30 items) return at once; the 4th brings 40 waiting and waits.
        try await waitUntil("three pages sent") { sent.withLock { $0 } == 3 }
        for expected in 0..<6 {
            #expect(try await channel.next() == .integer(expected))
        }
        // 34 wait: the producer was not woken (only a take below capacity wakes it).
        #expect(sent.withLock { $0 } == 3)
        #expect(try await channel.next() == .integer(6))
        try await waitUntil("the 4th page returns once 33 wait") { sent.withLock { $0 } == 4 }
        // Every item, in order, however many pages: 1,000 items through 34 places.
        var taken = 7
        while let item = try await channel.next() {
            #expect(item == .integer(taken))
            taken += 1
        }
        #expect(taken == 1_000)
        try await producer.value
    }

    @Test func aFailureComesAfterTheItemsSentBeforeIt() async throws {
        let channel = PageChannel(producer: "list", consumer: "each", capacity: 100)
        try await channel.send(Self.page(0))
        channel.finish(failure: "failed: page 2: expected 2xx, got 500")
        channel.finish()  // a later end changes nothing
        for expected in 0..<10 {
            #expect(try await channel.next() == .integer(expected))
        }
        await #expect(throws: PageChannel.Failure.self) { try await channel.next() }
    }

    @Test func aConsumerThatLeavesStopsAWaitingProducer() async throws {
        let channel = PageChannel(producer: "list", consumer: "each", capacity: 5)
        let producer = Task { try await channel.send(Self.page(0)) }
        try await waitUntil("the producer waits") { channel.isProducerWaiting }
        channel.leave()
        await #expect(throws: PageChannel.ConsumerGone.self) { try await producer.value }
        // And a page sent after it left is refused at once.
        await #expect(throws: PageChannel.ConsumerGone.self) { try await channel.send(Self.page(1)) }
    }

    @Test func cancellingAWaitingEndEndsItsWait() async throws {
        let channel = PageChannel(producer: "list", consumer: "each", capacity: 5)
        let consumer = Task { try await channel.next() }
        try await waitUntil("the consumer waits") { channel.isConsumerWaiting }
        consumer.cancel()
        await #expect(throws: CancellationError.self) { try await consumer.value }

        let producer = Task { try await channel.send(Self.page(0)) }
        try await waitUntil("the producer waits") { channel.isProducerWaiting }
        producer.cancel()
        await #expect(throws: CancellationError.self) { try await producer.value }
    }
}
