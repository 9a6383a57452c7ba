import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@Suite("TaskGraph", .timeLimit(.minutes(1)), .takesTurns)
struct TaskGraphTests {
    @Test func dependentsReceiveTheirDependenciesTypedResults() async throws {
        let graph = TaskGraph()
        let token = graph.add("login") { "token-1" }
        let id = graph.add("user id") { 42 }
        let profile = graph.add("profile", after: token, id) { token, id in "\(token)/\(id)" }
        let result = try await graph.run(limit: 2)
        #expect(try result.value(of: profile) == "token-1/42")
        #expect(result[token].attempts == 1)
        #expect(result.allSucceeded)
    }

    /// The seed: "B only after A has returned", A being an async request.
    @Test func aNodeStartsOnlyAfterItsDependencyReturned() async throws {
        let clock = ManualClock()
        let log = EventLog<String>()
        let graph = TaskGraph()
        let a = graph.add("A") {
            log.append("A started")
            try await clock.sleep(for: .seconds(2))
            log.append("A returned")
            return 1
        }
        let b = graph.add("B", after: a) { value in
            log.append("B started with \(value)")
            return value + 1
        }
        let run = Task { try await graph.run(limit: 5, clock: clock) }
        try await clock.waitForSleepers(1)
        #expect(log.events == ["A started"])
        clock.advance(by: .seconds(2))
        let result = try await run.value
        #expect(log.events == ["A started", "A returned", "B started with 1"])
        #expect(result[b].started == .seconds(2))
        #expect(result[a].ended == .seconds(2))
    }

    /// The seed: "two async methods, then a sync one", at most 5 at once.
    @Test func twoAsyncStepsThenASyncOne() async throws {
        let clock = ManualClock()
        let probe = ConcurrencyProbe()
        let graph = TaskGraph()
        let first = graph.add("first") {
            try await probe.measure {
                try await clock.sleep(for: .seconds(1))
                return 1
            }
        }
        let second = graph.add("second") {
            try await probe.measure {
                try await clock.sleep(for: .seconds(3))
                return 2
            }
        }
        let sum = graph.add("sum", after: first, second) { $0 + $1 }
        let run = Task { try await graph.run(limit: 5, clock: clock) }
        try await clock.waitForSleepers(2)
        clock.advanceToNextDeadline()
        clock.advanceToNextDeadline()
        let result = try await run.value
        #expect(try result.value(of: sum) == 3)
        #expect(probe.maximum == 2)
        #expect(result[sum].started == .seconds(3))
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func aFailureSkipsDependentsNamingTheCauseAndIndependentBranchesGoOn() async throws {
        let graph = TaskGraph()
        let login = graph.add("login") { () async throws -> String in throw TestError("401") }
        let profile = graph.add("profile", after: login) { $0 }
        let news = graph.add("news") { "headlines" }
        let report = graph.add("report", afterOutcomesOf: profile, news) { profile, news in
            "\(profile.state) / \(news.value ?? "-")"
        }
        let result = try await graph.run(limit: 2)
        #expect(result[login].error as? TestError == TestError("401"))
        #expect(result[profile].description == "skipped because \"login\" did not succeed")
        #expect(try result.value(of: news) == "headlines")
        #expect(try result.value(of: report) == "skipped because \"login\" did not succeed / headlines")
        let error = #expect(throws: TaskGraphError.self) { try result.value(of: profile) }
        #expect(error?.message == "node \"profile\" has no value: it skipped because \"login\" did not succeed")
    }

    @Test func failFastCancelsRunningNodesAndThrowsTheFirstFailureNamingTheNode() async throws {
        let clock = ManualClock()
        let sawCancellation = AsyncEvent()
        let graph = TaskGraph()
        graph.add("slow") {
            do { try await clock.sleep(for: .seconds(60)) } catch {
                sawCancellation.signal()
                throw error
            }
        }
        graph.add("broken") { () async throws -> Int in
            try await clock.sleep(for: .seconds(1))
            throw TestError("500")
        }
        let run = Task { try await graph.run(limit: 4, failurePolicy: .failFast, clock: clock) }
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: TaskGraphError.self) { try await run.value }
        #expect(error?.code == .nodeFailed)
        #expect(error?.path == ["broken"])
        #expect(error?.underlying as? TestError == TestError("500"))
        #expect(sawCancellation.isSignalled)
    }

    @Test func eachAttemptHasATimeoutAndRetriesGiveBackTheirSlot() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let graph = TaskGraph()
        let flaky = graph.add(
            "flaky", timeout: .seconds(5), retry: RetryPolicy(maxAttempts: 2, initialDelay: .seconds(1), jitter: 0)
        ) { () async throws -> String in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            if call == 1 { try await clock.sleep(for: .seconds(100)) }  // times out
            return "ok on \(call)"
        }
        let other = graph.add("other") {
            try await clock.sleep(for: .seconds(3))
            return 1
        }
        let run = Task { try await graph.run(limit: 1, clock: clock) }
        // flaky runs first (insertion order), its attempt sleeps and its timeout timer waits.
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(5))
        // The timed-out attempt backs off and gives its only slot to "other".
        try await clock.waitForSleepers(2)
        #expect(clock.pendingSleepers.map(\.offset).sorted() == [.seconds(6), .seconds(8)])
        clock.advance(by: .seconds(1))
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        let result = try await run.value
        #expect(try result.value(of: flaky) == "ok on 2")
        #expect(result[flaky].attempts == 2)
        #expect(result[other].started == .seconds(5))
        #expect(result[flaky].ended == .seconds(8))
    }

    @Test func aTimedOutNodeEndsTimedOut() async throws {
        let clock = ManualClock()
        let graph = TaskGraph()
        let stuck = graph.add("stuck", timeout: .seconds(2)) { try await clock.sleep(for: .seconds(60)) }
        let run = Task { try await graph.run(clock: clock) }
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(2))
        let result = try await run.value
        guard case .timedOut(let error) = result[stuck].state else {
            Issue.record("expected timed out, got \(result[stuck].state)")
            return
        }
        #expect(error.timeout == .seconds(2))
    }

    @Test func callbackNodesAreBridgedAndAnAbandonedCallbackEndsTheNode() async throws {
        let graph = TaskGraph()
        let size = graph.add("size") { 3 }
        let doubled = graph.addCallback("legacy", after: size) { (completion: Completion<Int>, size: Int) in
            DispatchQueueStandIn.async { completion.resume(returning: size * 2) }
        }
        let dropped = graph.addCallback("dropped") { (_: Completion<Int>) in }
        let result = try await graph.run()
        #expect(try result.value(of: doubled) == 6)
        #expect((result[dropped].error as? CallbackError)?.code == .abandoned)
    }

    @Test func cancellingTheRunCancelsRunningNodesAndStartsNothingNew() async throws {
        let clock = ManualClock()
        let started = EventLog<String>()
        let graph = TaskGraph()
        let first = graph.add("first") {
            started.append("first")
            try await clock.sleep(for: .seconds(10))
        }
        graph.add("second", after: first) { _ in started.append("second") }
        let run = Task { try await graph.run(clock: clock) }
        try await clock.waitForSleepers(1)
        run.cancel()
        await #expect(throws: CancellationError.self) { try await run.value }
        #expect(started.events == ["first"])
        #expect(clock.pendingSleepers.isEmpty)
    }

    @Test func idBasedGraphsAreValidatedBeforeAnythingRuns() async throws {
        let ran = EventLog<String>()
        let graph = TaskGraph()
        graph.add(id: "a", dependsOn: ["c"]) { _ in ran.append("a") }
        graph.add(id: "b", dependsOn: ["a"]) { _ in ran.append("b") }
        graph.add(id: "c") { _ in ran.append("c") }
        try graph.validate()
        try graph.addDependency("c", on: "b")
        let error = #expect(throws: TaskGraphError.self) { try graph.validate() }
        #expect(error?.code == .cycle)
        #expect(Set(error?.path ?? []) == ["a", "b", "c"])
        await #expect(throws: TaskGraphError.self) { try await graph.run() }
        #expect(ran.count == 0)

        try graph.removeDependency("c", on: "b")
        let result = try await graph.run(limit: 1)
        #expect(result.allSucceeded)
        #expect(ran.events == ["c", "a", "b"])
        #expect(throws: TaskGraphError.self) { try graph.addDependency("missing", on: "a") }
    }

    @Test func aGraphRunsAgainAndEveryChangeSinceItsLastRunIsChecked() async throws {
        let graph = TaskGraph()
        graph.add(id: "a") { _ in 1 }
        graph.add(id: "b", dependsOn: ["a"]) { inputs in try inputs.value(of: "a", as: Int.self) + 1 }
        #expect(try await graph.run().outcome(id: "b")?.value as? Int == 2)
        // The validated graph is kept for the next run; every change must still be seen.
        graph.add(id: "c", dependsOn: ["b"]) { inputs in try inputs.value(of: "b", as: Int.self) * 10 }
        let second = try await graph.run()
        #expect(second.outcome(id: "c")?.value as? Int == 20)
        #expect(second.nodeIDs == ["a", "b", "c"])

        try graph.addDependency("a", on: "a")
        let selfDependency = await #expect(throws: TaskGraphError.self) { try await graph.run() }
        #expect(selfDependency?.code == .selfDependency)
        #expect(selfDependency?.message == "node \"a\" depends on itself")
        try graph.removeDependency("a", on: "a")
        try graph.validate()

        graph.add(id: "b") { _ in 0 }
        let duplicate = #expect(throws: TaskGraphError.self) { try graph.validate() }
        #expect(duplicate?.code == .duplicateNode)
        #expect(duplicate?.message == "two nodes have the id \"b\"")
    }

    @Test func idBasedNodesReadTheirInputsByID() async throws {
        let graph = TaskGraph()
        graph.add(id: "token") { _ in "t" }
        graph.add(id: "profile", dependsOn: ["token"]) { inputs in
            try inputs.value(of: "token", as: String.self) + "!"
        }
        graph.add(id: "wrong", dependsOn: ["token"]) { inputs in try inputs.value(of: "token", as: Int.self) }
        let result = try await graph.run()
        #expect(result.outcome(id: "profile")?.value as? String == "t!")
        let error = result.outcome(id: "wrong")?.error as? TaskGraphError
        #expect(error?.code == .typeMismatch)
        #expect(error?.message == "dependency \"token\" produced a String, not a Int")
    }

    @Test func badLimitsAndResourcesAreRejectedNamingTheValue() async throws {
        let graph = TaskGraph()
        graph.add("upload", resources: ["network"]) { 1 }
        let limit = await #expect(throws: TaskGraphError.self) { try await graph.run(limit: 0) }
        #expect(limit?.message == "run(limit:) must be at least 1, got 0")
        let resource = await #expect(throws: TaskGraphError.self) { try await graph.run(resourceLimits: ["db": 2]) }
        #expect(resource?.code == .unknownResource)
        let zero = await #expect(throws: TaskGraphError.self) { try await graph.run(resourceLimits: ["network": 0]) }
        #expect(zero?.code == .invalidLimit)
    }
}

/// Calls back from another thread, like a completion-handler API.
enum DispatchQueueStandIn {
    static func async(_ work: @escaping @Sendable () -> Void) {
        Thread.detachNewThread(work)
    }
}
