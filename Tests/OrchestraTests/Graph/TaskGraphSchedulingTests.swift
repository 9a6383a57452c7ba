import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

/// Priorities and resources as `TaskGraph.run` applies them to real nodes (the scheduler state
/// machine's own tests check its decisions; these check the runner follows them).
@Suite("TaskGraph.run: priorities and resources", .timeLimit(.minutes(1)), .takesTurns)
struct TaskGraphSchedulingTests {
    @Test func withOneSlotTheHigherPriorityReadyNodeStartsFirst() async throws {
        let graph = TaskGraph()
        let started = EventLog<String>()
        // Inserted lowest first; "low" also has the longest path, which priority overrides.
        graph.add("low", cost: 10) { started.append("low") }
        graph.add("middle", priority: 1) { started.append("middle") }
        let gate = graph.add("gate", priority: 2) { started.append("gate") }
        // Ready only once "gate" ended: they compete with "low" and "middle" left waiting.
        graph.add("urgent", after: gate, priority: 5) { _ in started.append("urgent") }
        graph.add("after gate", after: gate, priority: 1) { _ in started.append("after gate") }
        let result = try await graph.run(limit: 1)
        #expect(result.allSucceeded)
        // "middle" and "after gate" tie on priority 1 and path length 1: insertion order.
        #expect(started.events == ["gate", "urgent", "middle", "after gate", "low"])
    }

    @Test func aResourceLimitKeepsAtMostThatManyOfItsNodesRunningWhileOthersGoOn() async throws {
        let graph = TaskGraph()
        let release = AsyncEvent()
        let database = ConcurrencyProbe()
        let otherDone = EventLog<String>()
        for index in 0..<6 {
            graph.add("db\(index)", resources: ["db"]) {
                try await database.measure { try await release.wait() }
            }
        }
        for index in 0..<3 {
            graph.add("net\(index)", resources: ["network"]) { otherDone.append("net\(index)") }
        }
        let result = try await graph.withRun(limit: 8, resourceLimits: ["db": 2, "network": 3]) { run in
            // Eight slots, but only two nodes may hold "db": the network nodes are not held back.
            try await waitUntil("two db nodes run and the network nodes ended") {
                database.current == 2 && otherDone.count == 3 && run.progress.completed == 3
            }
            #expect(run.progress.running == 2, "the four other db nodes wait for the resource, not for a slot")
            #expect(database.current == 2)
            release.signal()
            return try await run.result
        }
        #expect(result.allSucceeded)
        #expect(database.maximum == 2, "never more than the resource's limit, and the limit was used")
    }

    @Test func problemsListEveryNodeThatDidNotSucceedInInsertionOrderWithHowItEnded() async throws {
        let graph = TaskGraph()
        let never = AsyncEvent()
        graph.add("fine") { 1 }
        let broken = graph.add("broken") { () throws -> Int in throw TestError("down") }
        graph.add("dependent", after: broken) { $0 }
        graph.add("stuck") { try await never.wait() }
        graph.add("also fine") { "ok" }
        let result = try await graph.withRun(limit: 8) { run in
            try await waitUntil("only stuck still runs") { run.progress.completed == 4 && run.progress.running == 1 }
            run.cancel(id: "stuck")
            return try await run.result
        }
        #expect(!result.allSucceeded)
        #expect(result.problems.map(\.id) == ["broken", "dependent", "stuck"])
        #expect(
            result.problems.map(\.state.description) == [
                "failed: TestError(down)", "skipped because \"broken\" did not succeed", "cancelled",
            ])
    }

    @Test func aRunWhereEverythingSucceededHasNoProblems() async throws {
        let graph = TaskGraph()
        let first = graph.add("first") { 1 }
        graph.add("second", after: first) { $0 + 1 }
        let result = try await graph.run()
        #expect(result.allSucceeded)
        #expect(result.problems.isEmpty)
    }
}
