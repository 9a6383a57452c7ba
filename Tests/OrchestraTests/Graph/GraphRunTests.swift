import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@Suite("TaskGraph.withRun", .timeLimit(.minutes(1)), .takesTurns)
struct GraphRunTests {
    @Test func eventsAndProgressFollowTheRun() async throws {
        let graph = TaskGraph()
        let a = graph.add("a") { 1 }
        let b = graph.add("b", after: a) { $0 + 1 }
        graph.add("c", after: b) { _ in () }
        let (events, progress) = try await graph.withRun(limit: 1) { run in
            let result = try await run.result
            var events: [String] = []
            for await event in run.events { events.append("\(event.node) \(event.kind)") }
            #expect(result.allSucceeded)
            return (events, run.progress)
        }
        #expect(
            events == [
                "a started(attempt: 1)", "a succeeded", "b started(attempt: 1)", "b succeeded",
                "c started(attempt: 1)", "c succeeded",
            ])
        #expect(progress == GraphProgress(completed: 3, total: 3, running: 0))
        #expect(progress.fraction == 1)
    }

    @Test func cancellingARunningNodeSkipsItsDependentsAndNothingElse() async throws {
        let clock = ManualClock()
        let graph = TaskGraph()
        let slow = graph.add("slow") { try await clock.sleep(for: .seconds(60)) }
        let after = graph.add("after", after: slow) { _ in "never" }
        let other = graph.add("other") {
            try await clock.sleep(for: .seconds(1))
            return "done"
        }
        let result = try await graph.withRun(limit: 4, clock: clock) { run in
            try await clock.waitForSleepers(2)
            run.cancel(slow)
            try await clock.waitForSleepers(1)  // only "other" still sleeps
            clock.advance(by: .seconds(1))
            return try await run.result
        }
        #expect(result[slow].description == "cancelled")
        #expect(result[after].description == "skipped because \"slow\" did not succeed")
        #expect(try result.value(of: other) == "done")
    }

    @Test func cancellingAWaitingNodeNeverReleasesItsDependentsEarly() async throws {
        let clock = ManualClock()
        let graph = TaskGraph()
        let first = graph.add("first") {
            try await clock.sleep(for: .seconds(1))
            return 1
        }
        let middle = graph.add("middle", after: first) { $0 }
        let last = graph.add("last", after: middle) { $0 }
        let result = try await graph.withRun(limit: 4, clock: clock) { run in
            try await clock.waitForSleepers(1)
            run.cancel(middle)
            // The run's controller applies the cancellation as it reads its commands: advanced
            // before, "first" could end and release "middle" first (seen once under
            // ThreadSanitizer, "middle" then ran and succeeded).
            try await withHangGuard {
                for await event in run.events where event.node == "middle" {
                    if case .cancelled = event.kind { break }
                }
            }
            clock.advance(by: .seconds(1))
            return try await run.result
        }
        #expect(try result.value(of: first) == 1)
        #expect(result[middle].description == "cancelled")
        #expect(result[last].description == "skipped because \"middle\" did not succeed")
        #expect(result[last].attempts == 0)
    }

    /// Request chains: a step adds its follow-up once it knows it is needed.
    @Test func aNodeAddsItsFollowUpFromInside() async throws {
        let graph = TaskGraph()
        graph.add("page 1") { () async throws -> Int in
            let run = try #require(GraphRun.current)
            let page1 = Node<Int>(id: "page 1")
            try await run.add("page 2", after: page1) { count in count + 10 }
            return 5
        }
        let result = try await graph.withRun(limit: 2) { run in try await run.result }
        #expect(result.nodeIDs == ["page 1", "page 2"])
        #expect(result.outcome(id: "page 2")?.value as? Int == 15)
    }

    @Test func addingANodeWithAnUnknownDependencyOrADuplicateIdIsRejected() async throws {
        let clock = ManualClock()
        let graph = TaskGraph()
        let first = graph.add("first") { try await clock.sleep(for: .seconds(1)) }
        _ = try await graph.withRun(clock: clock) { run in
            let unknown = await #expect(throws: TaskGraphError.self) {
                try await run.add(id: "late", dependsOn: ["nowhere"]) { _ in 0 }
            }
            #expect(unknown?.code == .unknownDependency)
            let duplicate = await #expect(throws: TaskGraphError.self) {
                try await run.add("first", after: first) { _ in 0 }
            }
            #expect(duplicate?.code == .duplicateNode)
            try await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
            return try await run.result
        }
    }

    /// A node added while the last node ends races the end of the run: it is either accepted
    /// and runs to its end, or refused with `CancellationError` and absent from the result;
    /// never accepted and left without running.
    @Test func aNodeAddedAsTheRunEndsEitherRunsOrIsRefused() async throws {
        for _ in 0..<300 {
            let graph = TaskGraph()
            let adding = Locked<Task<Bool, Never>?>(nil)
            graph.add(id: "first") { _ in
                let run = try #require(GraphRun.current)
                // Unstructured on purpose: the node ends without waiting for the add, so the
                // add reaches the run just before or just after its last node ends.
                let task = Task {
                    do {
                        try await run.add(id: "late") { _ in 2 }
                        return true
                    } catch {
                        return false
                    }
                }
                adding.withLock { $0 = task }
                return 1
            }
            let result = try await graph.withRun { run in try await run.result }
            let accepted = await (try #require(adding.withLock { $0 })).value
            if accepted {
                #expect(result.outcome(id: "late")?.value as? Int == 2)
            } else {
                #expect(result.outcome(id: "late") == nil)
            }
            #expect(result.outcome(id: "first")?.value as? Int == 1)
        }
    }

    @Test func aNodeAddedAfterTheRunEndedIsRefused() async throws {
        let graph = TaskGraph()
        graph.add(id: "only") { _ in 1 }
        try await graph.withRun { run in
            _ = try await run.result
            await #expect(throws: CancellationError.self) { try await run.add(id: "late") { _ in 2 } }
        }
    }

    @Test func aThrowingBodyCancelsTheRun() async throws {
        let clock = ManualClock()
        let graph = TaskGraph()
        graph.add("forever") { try await clock.sleep(for: .seconds(3_600)) }
        await #expect(throws: TestError("view closed")) {
            try await graph.withRun(clock: clock) { _ in
                try await clock.waitForSleepers(1)
                throw TestError("view closed")
            }
        }
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func theEventBufferIsBoundedAndKeepsTheNewest() async throws {
        let graph = TaskGraph()
        for index in 0..<50 { graph.add("n\(index)") { index } }
        let received = try await graph.withRun(limit: 1, eventBuffer: 4) { run in
            _ = try await run.result
            var received: [GraphEvent] = []
            for await event in run.events { received.append(event) }
            return received
        }
        #expect(received.count == 4)
        #expect(received.last?.node == "n49")
    }
}
