import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

@Suite("Scheduler state machine", .timeLimit(.minutes(1)), .takesTurns)
struct SchedulerStateMachineTests {
    typealias Machine = SchedulerStateMachine

    func blueprint(_ nodes: [NodeSpec], limits: [String: Int] = [:]) throws -> GraphBlueprint {
        try GraphBlueprint(nodes, resourceLimits: limits)
    }

    func node(
        _ id: String, _ dependencies: String..., cost: Double = 1, priority: Int = 0, resources: [String] = [],
        always: Bool = false
    ) -> NodeSpec {
        NodeSpec(
            id: id, dependencies: dependencies, cost: cost, priority: priority, resources: resources,
            runsAfterAnyOutcome: always)
    }

    /// The seed: "op1 after op and op3, op2 independent, at most 5 at once".
    @Test func theOperationsDependencyGraph() throws {
        let graph = try blueprint([node("op"), node("op1", "op", "op3"), node("op2"), node("op3")])
        var machine = Machine(graph, limit: 5)
        #expect(machine.start().launch.map { graph.ids[$0] }.sorted() == ["op", "op2", "op3"])
        #expect(machine.finish(0, .succeeded).launch.isEmpty, "op1 still waits for op3")
        #expect(machine.finish(3, .succeeded).launch == [1])
        _ = machine.finish(2, .succeeded)
        _ = machine.finish(1, .succeeded)
        #expect(machine.isFinished)
    }

    /// What the runner prefetches: the nodes a node's end made ready (started or not), and the
    /// ready node that starts next.
    @Test func aNodesEndNamesTheNodesItMadeReadyAndTheNextToStart() throws {
        // a → b, a → c, a → d (d also waits for e); limit 1, so only one of b, c starts.
        let graph = try blueprint([
            node("a"), node("b", "a", cost: 3), node("c", "a", cost: 2), node("e"), node("d", "a", "e"),
        ])
        var machine = Machine(graph, limit: 1)
        #expect(machine.start().launch.map { graph.ids[$0] } == ["a"])
        #expect(machine.nextReady.map { graph.ids[$0] } == "e")
        let ended = machine.finish(0, .succeeded)
        #expect(ended.launch.map { graph.ids[$0] } == ["b"], "the longest path starts")
        #expect(ended.madeReady.map { graph.ids[$0] }.sorted() == ["b", "c"], "d still waits for e")
        #expect(machine.nextReady.map { graph.ids[$0] } == "c")
        #expect(machine.finish(1, .succeeded).launch.map { graph.ids[$0] } == ["c"])
        #expect(machine.finish(2, .succeeded).madeReady.isEmpty)
        #expect(machine.nextReady.map { graph.ids[$0] } == nil)
    }

    @Test func theLongestRemainingPathStartsFirstThenInsertionOrder() throws {
        // short(1) → end; long(1) → mid(5) → end; other(1) alone. Limit 1.
        let graph = try blueprint([
            node("short"), node("long"), node("mid", "long", cost: 5), node("other"), node("end", "short", "mid"),
        ])
        let run = SchedulerSimulation.run(graph, limit: 1)
        // end and other tie on path length (1): insertion order decides.
        #expect(run.launchOrder.map { graph.ids[$0] } == ["long", "mid", "short", "other", "end"])
        let fifo = SchedulerSimulation.run(graph, limit: 1, order: .readyOrder)
        #expect(fifo.launchOrder.map { graph.ids[$0] } == ["short", "long", "other", "mid", "end"])
    }

    @Test func priorityComesBeforeThePathLength() throws {
        let graph = try blueprint([node("long", cost: 10), node("urgent", priority: 1)])
        let run = SchedulerSimulation.run(graph, limit: 1, duration: { graph.costs[$0] })
        #expect(run.launchOrder == [1, 0])
    }

    @Test func aReadyNodeWhoseResourceIsFullNeverBlocksOthers() throws {
        let graph = try blueprint(
            [
                node("db1", cost: 9, resources: ["db"]), node("db2", cost: 8, resources: ["db"]),
                node("net", cost: 1, resources: ["network"]),
            ],
            limits: ["db": 1, "network": 4]
        )
        var machine = Machine(graph, limit: 3)
        #expect(machine.start().launch == [0, 2], "db2 is parked; net starts on the free slot")
        #expect(machine.finish(2, .succeeded).launch.isEmpty)
        #expect(machine.finish(0, .succeeded).launch == [1], "releasing db admits the parked node")
    }

    @Test func aNodeBackingOffGivesBackItsSlotAndResources() throws {
        let graph = try blueprint(
            [node("flaky", cost: 5, resources: ["api"]), node("next", resources: ["api"])], limits: ["api": 1])
        var machine = Machine(graph, limit: 1)
        #expect(machine.start().launch == [0])
        #expect(machine.suspendForBackoff(0).launch == [1])
        #expect(machine.resumeAfterBackoff(0).launch.isEmpty, "slot and resource are busy")
        #expect(machine.finish(1, .succeeded).launch == [0])
        _ = machine.finish(0, .succeeded)
        #expect(machine.isFinished)
    }

    @Test func aFailureSkipsDependentsWithTheRootCauseWhileIndependentBranchesGoOn() throws {
        let graph = try blueprint([
            node("login"), node("profile", "login"), node("avatar", "profile"), node("news"),
            node("report", "profile", "news", always: true),
        ])
        var machine = Machine(graph, limit: 4)
        #expect(machine.start().launch == [0, 3])
        let failure = machine.finish(0, .failed)
        #expect(failure.skipped == [.init(node: 1, cause: 0), .init(node: 2, cause: 0)])
        #expect(failure.launch.isEmpty, "report still waits for news")
        #expect(machine.finish(3, .succeeded).launch == [4], "an afterOutcomesOf node runs whatever happened")
        _ = machine.finish(4, .succeeded)
        #expect(machine.isFinished)
        #expect(machine.states == [.failed, .skipped(cause: 0), .skipped(cause: 0), .succeeded, .succeeded])
    }

    @Test func failFastCancelsWhatRunsAndSkipsTheRest() throws {
        let graph = try blueprint([node("a"), node("b"), node("c", "a"), node("d")])
        var machine = Machine(graph, limit: 2, failurePolicy: .failFast)
        #expect(machine.start().launch == [0, 1])
        let failure = machine.finish(0, .failed)
        #expect(failure.cancelRunning == [1])
        #expect(Set(failure.skipped.map(\.node)) == [2, 3])
        #expect(failure.launch.isEmpty)
        #expect(machine.finish(1, .cancelled).launch.isEmpty)
        #expect(machine.isFinished)
    }

    @Test func cancellingAWaitingNodeSkipsItsDependentsAndNeverReleasesThemEarly() throws {
        let graph = try blueprint([node("slow"), node("middle", "slow"), node("last", "middle")])
        var machine = Machine(graph, limit: 2)
        #expect(machine.start().launch == [0])
        let cancelled = machine.cancel(1)
        #expect(cancelled.launch.isEmpty, "nothing that depended on it starts")
        #expect(cancelled.skipped == [.init(node: 2, cause: 1)])
        #expect(machine.cancel(0).cancelRunning == [0], "a running node is cancelled by the runner")
        _ = machine.finish(0, .cancelled)
        #expect(machine.isFinished)
        #expect(machine.states == [.cancelled, .cancelled, .skipped(cause: 1)])
    }

    @Test func cancellingTheRunStartsNothingNew() throws {
        let graph = try blueprint([node("a"), node("b", "a"), node("c")])
        var machine = Machine(graph, limit: 1)
        #expect(machine.start().launch == [0])
        #expect(machine.cancelAll().cancelRunning == [0])
        #expect(machine.finish(0, .succeeded).launch.isEmpty)
        #expect(machine.isFinished)
        #expect(machine.states == [.succeeded, .cancelled, .cancelled])
    }

    /// Random DAGs with random failures and afterOutcomesOf nodes: every edge is respected, the
    /// limits hold, and every node ends in exactly one terminal state.
    @Test(arguments: [11 as UInt64, 4242, 90210])
    func randomGraphsKeepEveryRule(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        for round in 0..<20 {
            let count = Int.random(in: 1...400, using: &generator)
            var nodes: [NodeSpec] = []
            for index in 0..<count {
                let dependencyCount = index == 0 ? 0 : Int.random(in: 0...min(4, index), using: &generator)
                let dependencies = Set((0..<dependencyCount).map { _ in Int.random(in: 0..<index, using: &generator) })
                nodes.append(
                    NodeSpec(
                        id: "n\(index)",
                        dependencies: dependencies.map { "n\($0)" },
                        cost: Double(Int.random(in: 0...9, using: &generator)),
                        priority: Int.random(in: 0...2, using: &generator),
                        resources: Bool.random(using: &generator) ? ["r"] : [],
                        runsAfterAnyOutcome: Int.random(in: 0..<10, using: &generator) == 0
                    ))
            }
            let graph = try GraphBlueprint(nodes, resourceLimits: ["r": Int.random(in: 1...3, using: &generator)])
            let limit = Int.random(in: 1...8, using: &generator)
            let failing = Set((0..<count).filter { _ in Int.random(in: 0..<15, using: &generator) == 0 })
            let policy: FailurePolicy = Bool.random(using: &generator) ? .cancelDependents : .failFast
            let run = SchedulerSimulation.run(
                graph, limit: limit, failurePolicy: policy,
                duration: { graph.costs[$0] }, outcome: { failing.contains($0) ? .failed : .succeeded }
            )
            let context = "seed \(seed), round \(round)"
            #expect(run.machine.isFinished, "\(context)")
            #expect(run.machine.states.allSatisfy { $0.isTerminal }, "\(context): a node never ended")
            #expect(run.machine.terminalCount == count, "\(context): a node ended twice")
            #expect(run.maxRunning <= limit, "\(context)")
            for node in 0..<count {
                guard let start = run.starts[node] else {
                    // Never started: it must have been skipped or cancelled.
                    #expect(
                        run.machine.states[node] != .succeeded && run.machine.states[node] != .failed,
                        "\(context): n\(node)")
                    continue
                }
                for dependency in graph.dependencies(of: node).map(Int.init) {
                    guard let ended = run.ends[dependency] else {
                        // A dependency that never ran: only an afterOutcomesOf node may go on.
                        #expect(
                            graph.runsAfterAnyOutcome(node),
                            "\(context): n\(node) started though n\(dependency) never ran")
                        #expect(run.machine.states[dependency] != .succeeded, "\(context)")
                        continue
                    }
                    #expect(ended <= start, "\(context): edge n\(dependency) → n\(node)")
                    if !graph.runsAfterAnyOutcome(node) {
                        #expect(
                            run.machine.states[dependency] == .succeeded,
                            "\(context): n\(node) ran after a failed dependency")
                    }
                }
            }
            // The resource limit holds at every instant.
            let resourceLimit = graph.resourceLimits[0]
            let users = (0..<count).filter { !graph.resources(of: $0).isEmpty && run.starts[$0] != nil }
            for user in users {
                let at = run.starts[user]!
                let overlapping = users.filter { run.starts[$0]! <= at && at < run.ends[$0]! && graph.costs[$0] > 0 }
                #expect(overlapping.count <= resourceLimit, "\(context): resource over its limit at \(at)")
            }
        }
    }
}
