/// A discrete-event simulation of the graph scheduler, for benchmarks that measure scheduling
/// quality (makespan against a proven optimum) without running anything.
///
/// Not part of the stable API: import it with `@_spi(Simulation) import Orchestra`.
@_spi(Simulation)
public enum ScheduleSimulation {
    /// The order among ready nodes.
    public enum Order: Sendable {
        /// Orchestra's policy: priority, then longest remaining path, then insertion order.
        case criticalPath
        /// Plain FIFO: the order nodes became ready.
        case fifo
    }

    /// One task: its id, duration and dependencies (by id).
    public struct Task: Sendable {
        /// The task's id.
        public var id: String
        /// How long it runs, in any unit.
        public var duration: Double
        /// The ids of the tasks that must end first.
        public var dependencies: [String]

        /// A task of `duration` after its `dependencies`.
        public init(id: String, duration: Double, dependencies: [String]) {
            self.id = id
            self.duration = duration
            self.dependencies = dependencies
        }
    }

    /// The time from the first start to the last end when `tasks` run on `workers` identical
    /// workers, each task taking its duration, scheduled by the graph scheduler.
    ///
    /// - Throws: ``TaskGraphError`` if the tasks do not form a valid graph.
    public static func makespan(
        of tasks: [Task], workers: Int, order: Order = .criticalPath
    ) throws(TaskGraphError) -> Double {
        guard workers >= 1 else {
            throw TaskGraphError(
                code: .invalidLimit, message: "ScheduleSimulation: workers must be at least 1, got \(workers)")
        }
        let blueprint = try GraphBlueprint(
            tasks.map { NodeSpec(id: $0.id, dependencies: $0.dependencies, cost: $0.duration) })
        var machine = SchedulerStateMachine(
            blueprint, limit: workers, order: order == .criticalPath ? .criticalPath : .readyOrder)
        var events: [(time: Double, node: Int)] = []
        var now = 0.0
        for node in machine.start().launch { events.append((blueprint.costs[node], node)) }
        while let next = events.indices.min(by: {
            (events[$0].time, events[$0].node) < (events[$1].time, events[$1].node)
        }) {
            let (time, node) = events.remove(at: next)
            now = time
            for started in machine.finish(node, .succeeded).launch {
                events.append((now + blueprint.costs[started], started))
            }
        }
        return now
    }
}
