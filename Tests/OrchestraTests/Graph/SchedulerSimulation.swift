@testable import Orchestra

/// Drives a ``SchedulerStateMachine`` in a discrete-event simulation: each started node runs
/// for its duration, then ends with the outcome `outcome(node)` gives.
struct SchedulerSimulation {
    struct Run {
        var makespan: Double
        var starts: [Double?]
        var ends: [Double?]
        var launchOrder: [Int]
        var maxRunning: Int
        var machine: SchedulerStateMachine
    }

    static func run(
        _ blueprint: GraphBlueprint,
        limit: Int,
        order: SchedulerStateMachine.Order = .criticalPath,
        failurePolicy: FailurePolicy = .cancelDependents,
        duration: (Int) -> Double = { _ in 1 },
        outcome: (Int) -> SchedulerStateMachine.Outcome = { _ in .succeeded }
    ) -> Run {
        var machine = SchedulerStateMachine(blueprint, limit: limit, order: order, failurePolicy: failurePolicy)
        var starts = [Double?](repeating: nil, count: blueprint.count)
        var ends = [Double?](repeating: nil, count: blueprint.count)
        var launchOrder: [Int] = []
        var events: [(time: Double, node: Int)] = []
        var now = 0.0
        var maxRunning = 0
        func launch(_ transition: SchedulerStateMachine.Transition) {
            for node in transition.launch {
                starts[node] = now
                launchOrder.append(node)
                events.append((now + duration(node), node))
            }
            maxRunning = max(maxRunning, machine.running)
        }
        launch(machine.start())
        while !events.isEmpty {
            let next = events.indices.min { (events[$0].time, events[$0].node) < (events[$1].time, events[$1].node) }!
            let (time, node) = events.remove(at: next)
            now = time
            ends[node] = now
            var transition = machine.finish(node, outcome(node))
            // Fail-fast cancellations end at once in the simulation.
            for running in transition.cancelRunning {
                events.removeAll { $0.node == running }
                ends[running] = now
                let more = machine.finish(running, .cancelled)
                transition.launch += more.launch
            }
            launch(transition)
        }
        return Run(
            makespan: now, starts: starts, ends: ends, launchOrder: launchOrder, maxRunning: maxRunning,
            machine: machine)
    }
}
