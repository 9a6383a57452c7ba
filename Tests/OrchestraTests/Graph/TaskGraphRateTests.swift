import OrchestraTestKit
import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

/// `TaskGraph.run(rateLimits:)`: the scheduler's decisions (a node without a permit holds no
/// slot and holds back no other resource's nodes), and a run on a `ManualClock` with the exact
/// instant each node starts.
@Suite("TaskGraph rates", .timeLimit(.minutes(1)), .takesTurns)
struct TaskGraphRateTests {
    // MARK: - The state machine

    func node(_ id: String, resources: [String]) -> NodeSpec {
        NodeSpec(id: id, dependencies: [], cost: 1, priority: 0, resources: resources, runsAfterAnyOutcome: false)
    }

    /// Resources sort by name: "fast" is 0, "slow" is 1.
    @Test func aNodeWithoutAPermitHoldsNoSlotAndHoldsBackNoOtherResource() throws {
        let graph = try GraphBlueprint(
            [
                node("s0", resources: ["slow"]), node("s1", resources: ["slow"]),
                node("f0", resources: ["fast"]), node("f1", resources: ["fast"]), node("f2", resources: ["fast"]),
                node("plain", resources: []),
            ],
            resourceLimits: ["fast": .max, "slow": .max])
        var machine = SchedulerStateMachine(graph, limit: 5)
        machine.limitRate(ofResource: 0, permits: 1)
        machine.limitRate(ofResource: 1, permits: 1)
        let ids = { (nodes: [Int]) in nodes.map { graph.ids[$0] } }

        var transition = machine.start()
        #expect(ids(transition.launch) == ["s0", "f0", "plain"])
        #expect(transition.rateWaits == [1, 0], "each resource asks once to be woken")
        #expect(machine.running == 3, "the nodes waiting for a permit hold no slot")

        transition = machine.permitsAvailable(0, permits: 1)
        #expect(ids(transition.launch) == ["f1"], "the fast resource's permit does not wait for the slow one's")
        #expect(transition.rateWaits == [0], "f2 waits for the next one")

        transition = machine.finish(graph.indexIfPresent(of: "s0")!, .succeeded)
        #expect(transition.launch.isEmpty, "a free slot does not start s1 without its permit")
        #expect(transition.rateWaits.isEmpty, "the slow resource was already asked to wake")

        transition = machine.permitsAvailable(1, permits: 3)
        #expect(ids(transition.launch) == ["s1"])
        transition = machine.permitsAvailable(0, permits: 2)
        #expect(ids(transition.launch) == ["f2"])
    }

    @Test func aNodeTakesItsSlotItsResourceAndItsPermitTogether() throws {
        let graph = try GraphBlueprint(
            [node("a", resources: ["api"]), node("b", resources: ["api"]), node("c", resources: ["api"])],
            resourceLimits: ["api": 1])
        var machine = SchedulerStateMachine(graph, limit: 8)
        machine.limitRate(ofResource: 0, permits: 2)
        #expect(machine.start().launch == [0], "b waits for the resource, not for a permit")
        // b takes the second permit when a ends; c then finds none.
        #expect(machine.finish(0, .succeeded).launch == [1])
        let transition = machine.finish(1, .succeeded)
        #expect(transition.launch.isEmpty)
        #expect(transition.rateWaits == [0])
        #expect(machine.permitsAvailable(0, permits: 1).launch == [2])
    }

    @Test func cancellingTheRunForgetsTheNodesWaitingForAPermit() throws {
        let graph = try GraphBlueprint(
            [node("a", resources: ["api"]), node("b", resources: ["api"])], resourceLimits: ["api": .max])
        var machine = SchedulerStateMachine(graph, limit: 8)
        machine.limitRate(ofResource: 0, permits: 1)
        #expect(machine.start().launch == [0])
        _ = machine.cancelAll()
        #expect(machine.states[1] == .cancelled)
        #expect(machine.permitsAvailable(0, permits: 1).launch.isEmpty, "a late wake-up starts nothing")
    }

    /// The count a run's scheduler starts from: what `tryAcquire` would grant one after
    /// another, never more.
    @Test func theLimiterCountsThePermitsItWouldGrantNow() {
        var machine = RateLimiterStateMachine<Int, String>(rate: .perSecond(1), burst: 3)
        #expect(machine.grantable(now: .zero) == 3)
        let first = machine.tryAcquire(now: .zero)
        #expect(first)
        #expect(machine.grantable(now: .zero) == 2)
        let rest = machine.tryAcquire(now: .zero) && machine.tryAcquire(now: .zero)
        #expect(rest)
        #expect(machine.grantable(now: .zero) == 0)
        #expect(machine.grantable(now: .milliseconds(999)) == 0)
        #expect(machine.grantable(now: .seconds(1)) == 1)
        #expect(machine.grantable(now: .milliseconds(2_500)) == 2)
        #expect(machine.grantable(now: .seconds(60)) == 3)
        for now in [Duration.seconds(1), .milliseconds(2_500), .seconds(60)] {
            var copy = machine
            let counted = copy.grantable(now: now)
            var granted = 0
            while copy.tryAcquire(now: now) { granted += 1 }
            #expect(granted == counted, "at \(now)")
        }
        machine.pause(until: .seconds(90), now: .seconds(60))
        #expect(machine.grantable(now: .seconds(60)) == 0)
        #expect(machine.nextGrant == .seconds(90))
    }

    // MARK: - Runs on a ManualClock

    /// Nodes that log the instant they start, on `clock`.
    final class Starts: Sendable {
        let clock: ManualClock
        let log = EventLog<String>()
        private let times = Locked<[String: Duration]>([:])

        init(_ clock: ManualClock) { self.clock = clock }

        func record(_ id: String) {
            times.withLock { $0[id] = clock.now.offset }
            log.append(id)
        }

        var at: [String: Duration] { times.withLock { $0 } }
    }

    /// Waits until `count` nodes started and `sleepers` tasks sleep on the clock, then
    /// advances it to the earliest deadline.
    static func step(_ starts: Starts, started count: Int, sleepers: Int) async throws {
        try await waitUntil("\(count) nodes started and \(sleepers) sleep on the clock") {
            starts.log.count == count && starts.clock.sleeperCount == sleepers
        }
        starts.clock.advanceToNextDeadline()
    }

    /// Two slots, a resource at one start per 10 s and one at 2 a second: the slow resource's
    /// nodes wait for their permits without a slot, and the fast ones start at their own rate.
    @Test func theSlowResourceDoesNotHoldBackTheFastOne() async throws {
        let clock = ManualClock()
        let starts = Starts(clock)
        let graph = TaskGraph()
        for index in 0..<3 { graph.add("slow\(index)", resources: ["slow"]) { starts.record("slow\(index)") } }
        for index in 0..<4 { graph.add("fast\(index)", resources: ["fast"]) { starts.record("fast\(index)") } }
        let run = Task {
            try await graph.run(
                limit: 2, rateLimits: ["slow": .per(1, .seconds(10)), "fast": .perSecond(2)], clock: clock)
        }
        try await Self.step(starts, started: 2, sleepers: 2)  // → 0.5 s
        try await Self.step(starts, started: 3, sleepers: 2)  // → 1 s
        try await Self.step(starts, started: 4, sleepers: 2)  // → 1.5 s
        try await Self.step(starts, started: 5, sleepers: 1)  // → 10 s: only the slow one waits
        try await Self.step(starts, started: 6, sleepers: 1)  // → 20 s
        let result = try await run.value
        #expect(result.allSucceeded)
        let ms = { (milliseconds: Int) in Duration.milliseconds(milliseconds) }
        #expect(
            starts.at == [
                "slow0": .zero, "slow1": .seconds(10), "slow2": .seconds(20),
                "fast0": .zero, "fast1": ms(500), "fast2": ms(1_000), "fast3": ms(1_500),
            ])
        #expect(result.outcome(id: "fast3")?.started == ms(1_500))
        #expect(clock.sleeperCount == 0)
    }

    /// A resource with both: at most one of its nodes runs at once (the limit binds while a
    /// node runs), and none starts sooner than 1 s after the previous (the rate binds when
    /// they are quick).
    @Test func aResourceLimitAndARateBindWhicheverIsLater() async throws {
        let clock = ManualClock()
        let starts = Starts(clock)
        let release = AsyncEvent()
        let graph = TaskGraph()
        graph.add("long", resources: ["api"]) {
            starts.record("long")
            try await release.wait()
        }
        graph.add("quick0", resources: ["api"]) { starts.record("quick0") }
        graph.add("quick1", resources: ["api"]) { starts.record("quick1") }
        let run = Task {
            try await graph.run(limit: 8, resourceLimits: ["api": 1], rateLimits: ["api": .perSecond(1)], clock: clock)
        }
        try await waitUntil("long started") { starts.log.count == 1 }
        clock.advance(by: .seconds(3))
        #expect(clock.sleeperCount == 0, "quick0 waits for the resource, and asks for no permit")
        release.signal()
        // quick0 starts at once (its permit is long due); quick1 then waits 1 s for its own.
        try await Self.step(starts, started: 2, sleepers: 1)
        let result = try await run.value
        #expect(result.allSucceeded)
        #expect(starts.at == ["long": .zero, "quick0": .seconds(3), "quick1": .seconds(4)])
    }

    @Test func everyAttemptTakesAPermit() async throws {
        let clock = ManualClock()
        let starts = Starts(clock)
        let graph = TaskGraph()
        let attempts = Locked(0)
        graph.add("flaky", retry: RetryPolicy(maxAttempts: 2, initialDelay: .zero), resources: ["api"]) {
            starts.record("flaky \(attempts.withLock { $0 })")
            if attempts.withLock({ value in
                value += 1
                return value
            }) == 1 {
                throw TestError("first attempt")
            }
        }
        let run = Task { try await graph.run(rateLimits: ["api": .perSecond(4)], clock: clock) }
        try await Self.step(starts, started: 1, sleepers: 1)
        let result = try await run.value
        #expect(result.allSucceeded)
        #expect(starts.at == ["flaky 0": .zero, "flaky 1": .milliseconds(250)])
    }

    @Test func cancellingARunWhileNodesWaitForPermitsEndsIt() async throws {
        let clock = ManualClock()
        let starts = Starts(clock)
        let graph = TaskGraph()
        for index in 0..<3 { graph.add("n\(index)", resources: ["api"]) { starts.record("n\(index)") } }
        let run = Task { try await graph.run(limit: 4, rateLimits: ["api": .perMinute(1)], clock: clock) }
        try await waitUntil("n0 started and the others wait") { starts.log.count == 1 && clock.sleeperCount == 1 }
        run.cancel()
        await #expect(throws: CancellationError.self) { try await run.value }
        #expect(starts.log.events == ["n0"])
        #expect(clock.sleeperCount == 0, "the wait for the next permit ended with the run")
    }

    // MARK: - Validation

    @Test func aRateWithoutALimitIsEnoughAndARateForAnUnusedResourceIsAllowed() async throws {
        let graph = TaskGraph()
        graph.add("a", resources: ["api"]) {}
        let result = try await graph.run(
            rateLimits: ["api": .perSecond(1_000_000), "unused": .perSecond(1)], rateBurst: 10)
        #expect(result.allSucceeded)
    }

    @Test func aResourceWithNeitherALimitNorARateIsStillRejected() async throws {
        let graph = TaskGraph()
        graph.add("a", resources: ["api", "db"]) {}
        await #expect(throws: TaskGraphError.self) { try await graph.run(rateLimits: ["api": .perSecond(1)]) }
    }

    @Test func aBurstBelowOneIsRejectedNamingIt() async throws {
        let graph = TaskGraph()
        graph.add("a", resources: ["api"]) {}
        let error = await #expect(throws: TaskGraphError.self) {
            try await graph.run(rateLimits: ["api": .perSecond(1)], rateBurst: 0)
        }
        #expect(error?.code == .invalidLimit)
        #expect(error?.message == "run(rateBurst:) must be at least 1, got 0")
        let observed = await #expect(throws: TaskGraphError.self) {
            try await graph.withRun(rateLimits: ["api": .perSecond(1)], rateBurst: -1) { _ in }
        }
        #expect(observed?.message == "withRun(rateBurst:) must be at least 1, got -1")
    }
}
