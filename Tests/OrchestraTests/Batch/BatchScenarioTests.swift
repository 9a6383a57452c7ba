import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

/// The batch scenarios: eight simulated downloads with different latencies on a manual clock.
/// Each test checks the exact start times against the reference schedule, the order results
/// are handled in, and the largest number of downloads that ran at once.
@Suite("Batch scenarios: eight downloads", .timeLimit(.minutes(1)), .takesTurns)
struct BatchScenarioTests {
    let network = SimulatedNetwork(clock: ManualClock())

    func expectStarts(_ reference: ReferenceSchedule, sourceLocation: SourceLocation = #_sourceLocation) {
        let starts = network.starts
        for index in Gallery.latencies.indices {
            #expect(starts[index] == reference.starts[index], "download \(index)", sourceLocation: sourceLocation)
        }
        #expect(
            network.probe.maximum == reference.maxConcurrency, "most downloads at once", sourceLocation: sourceLocation)
        #expect(
            network.clock.pendingSleepers.isEmpty, "nothing left suspended on the clock", sourceLocation: sourceLocation
        )
    }

    /// dispatch_group enter/leave + notify: all in parallel, one final callback.
    @Test func allInParallelWithOneFinalCallback() async throws {
        let reference = ReferenceSchedule(latencies: Gallery.latencies, limit: 8, order: .completion)
        let batch = Task { [network] in
            try await Gallery.urls.indices.concurrentMap(limit: 8) { try await network.fetch($0) }
        }
        try await network.drive(totalWakeups: 8, expectedSleepers: reference.sleepers(at:))
        let images = try await batch.value
        #expect(images == Gallery.urls.indices.map { "image \($0)" }, "results in input order")
        #expect(network.clock.now.offset == .milliseconds(Gallery.latencies.max()!), "done when the slowest is done")
        expectStarts(reference)
        #expect(reference.maxConcurrency == 8)
    }

    /// Parallel, each result handled as it arrives (out of order).
    @Test func outOfOrderCompletions() async throws {
        let reference = ReferenceSchedule(latencies: Gallery.latencies, limit: 3, order: .completion)
        // Two downloads ending at the same instant could be handled in either order.
        try #require(Set(reference.ends).count == reference.ends.count, "the latencies must not tie at limit 3")
        let handled = EventLog<Int>()
        let batch = Task { [network] in
            for await (index, result) in Gallery.urls.indices.completions(limit: 3, { try await network.fetch($0) }) {
                #expect((try? result.get()) == "image \(index)")
                handled.append(index)
            }
        }
        try await network.drive(totalWakeups: 8, expectedSleepers: reference.sleepers(at:)) { woken in
            handled.count == woken
        }
        await batch.value
        #expect(handled.events == reference.deliveries)
        #expect(handled.events != Array(0..<8), "the scenario really is out of order")
        expectStarts(reference)
    }

    /// NSConditionLock: parallel requests, results handled in input order.
    @Test func orderedHandling() async throws {
        let reference = ReferenceSchedule(latencies: Gallery.latencies, limit: 3, order: .input)
        let handled = EventLog<Int>()
        let batch = Task { [network] in
            var index = 0
            for await result in Gallery.urls.indices.orderedResults(limit: 3, { try await network.fetch($0) }) {
                #expect((try? result.get()) == "image \(index)")
                handled.append(index)
                index += 1
            }
        }
        try await network.drive(totalWakeups: 8, expectedSleepers: reference.sleepers(at:))
        await batch.value
        #expect(handled.events == Array(0..<8))
        expectStarts(reference)
        // Item i + limit never starts before item i is delivered (i.e. before items 0...i end).
        for index in 3..<8 {
            let deliveredAt = (0...(index - 3)).map { reference.ends[$0] }.max()!
            #expect(
                network.starts[index]! >= deliveredAt,
                "download \(index) started before download \(index - 3) was handled")
        }
    }

    /// One after another: the next starts only after the previous returned.
    @Test func serial() async throws {
        let reference = ReferenceSchedule(latencies: Gallery.latencies, limit: 1, order: .completion)
        let batch = Task { [network] in
            try await Gallery.urls.indices.concurrentMap(limit: 1) { try await network.fetch($0) }
        }
        try await network.drive(totalWakeups: 8, expectedSleepers: reference.sleepers(at:))
        _ = try await batch.value
        expectStarts(reference)
        #expect(network.probe.maximum == 1)
        var elapsed = 0
        for (index, latency) in Gallery.latencies.enumerated() {
            #expect(network.starts[index] == .milliseconds(elapsed))
            elapsed += latency
        }
    }

    /// dispatch_semaphore(2): at most two at once, without blocking a thread.
    @Test func atMostTwoAtOnce() async throws {
        let reference = ReferenceSchedule(latencies: Gallery.latencies, limit: 2, order: .completion)
        let batch = Task { [network] in
            try await Gallery.urls.indices.concurrentMap(limit: 2) { try await network.fetch($0) }
        }
        try await network.drive(totalWakeups: 8, expectedSleepers: reference.sleepers(at:))
        _ = try await batch.value
        expectStarts(reference)
        #expect(network.probe.maximum == 2)
    }

    /// "Set how many downloads run at once, dynamically": 2, then 5 after the first finishes.
    @Test func limitRaisedMidRun() async throws {
        let limiter = ConcurrencyLimiter(limit: 2)
        let maxBeforeRaise = Locked(0)
        let batch = Task { [network] in
            try await Gallery.urls.indices.concurrentMap(limit: 8) { index in
                try await limiter.withPermit { try await network.fetch(index) }
            }
        }
        var woken = 0
        var raised = false
        while woken < 8 {
            try await network.clock.waitForSleepers(min(limiter.limit, 8 - woken), timeout: .seconds(20))
            if !raised { maxBeforeRaise.withLock { $0 = network.probe.maximum } }
            woken += network.clock.advanceToNextDeadline()
            if !raised {
                limiter.limit = 5
                raised = true
            }
        }
        _ = try await batch.value
        #expect(maxBeforeRaise.withLock { $0 } == 2)
        #expect(network.probe.maximum == 5)
        #expect(limiter.running == 0)
        #expect(network.clock.pendingSleepers.isEmpty)
    }
}
