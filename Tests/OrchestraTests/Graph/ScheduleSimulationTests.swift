@_spi(Simulation) import Orchestra
import TestSupport
import Testing

/// `ScheduleSimulation.makespan` on graphs small enough to schedule by hand: every expected
/// number is worked out in the comments, not taken from the implementation.
@Suite("ScheduleSimulation.makespan", .timeLimit(.minutes(1)), .takesTurns)
struct ScheduleSimulationTests {
    typealias SimulatedTask = ScheduleSimulation.Task

    func task(_ id: String, _ duration: Double, after dependencies: String...) -> SimulatedTask {
        SimulatedTask(id: id, duration: duration, dependencies: dependencies)
    }

    /// a(2) → b(3) → c(1): one after the other whatever the workers: 2 + 3 + 1 = 6.
    @Test(arguments: [1, 2, 5])
    func aChainTakesTheSumOfItsDurations(workers: Int) throws {
        let chain = [task("a", 2), task("b", 3, after: "a"), task("c", 1, after: "b")]
        #expect(try ScheduleSimulation.makespan(of: chain, workers: workers) == 6)
        #expect(try ScheduleSimulation.makespan(of: chain, workers: workers, order: .fifo) == 6)
    }

    /// s(1) → x(4), y(2), z(3) → j(1).
    static let forkJoin = [
        SimulatedTask(id: "s", duration: 1, dependencies: []),
        SimulatedTask(id: "x", duration: 4, dependencies: ["s"]),
        SimulatedTask(id: "y", duration: 2, dependencies: ["s"]),
        SimulatedTask(id: "z", duration: 3, dependencies: ["s"]),
        SimulatedTask(id: "j", duration: 1, dependencies: ["x", "y", "z"]),
    ]

    @Test func aForkJoinOnOneWorkerTakesTheSumOfItsDurations() throws {
        // 1 + 4 + 2 + 3 + 1 = 11.
        #expect(try ScheduleSimulation.makespan(of: Self.forkJoin, workers: 1) == 11)
    }

    @Test func aForkJoinOnTwoWorkers() throws {
        // s 0–1. Remaining paths: x 4+1 = 5, z 3+1 = 4, y 2+1 = 3, so x and z start at 1;
        // z ends at 4 and y runs 4–6; x ends at 5; j runs 6–7.
        #expect(try ScheduleSimulation.makespan(of: Self.forkJoin, workers: 2) == 7)
    }

    @Test func aForkJoinWithAWorkerPerBranchTakesItsLongestPath() throws {
        // s 0–1; x, y, z together 1–5 (x is the longest); j 5–6.
        #expect(try ScheduleSimulation.makespan(of: Self.forkJoin, workers: 3) == 6)
        #expect(try ScheduleSimulation.makespan(of: Self.forkJoin, workers: 10) == 6)
    }

    @Test func theLongestTaskFirstBeatsReadyOrderWhenItMatters() throws {
        // a(1), b(1), c(3), independent, on 2 workers.
        // Critical path: c and a at 0; a ends at 1, b runs 1–2; c ends at 3. Makespan 3.
        // Ready order (a, b, c): a and b at 0–1, then c 1–4. Makespan 4.
        let tasks = [task("a", 1), task("b", 1), task("c", 3)]
        #expect(try ScheduleSimulation.makespan(of: tasks, workers: 2) == 3)
        #expect(try ScheduleSimulation.makespan(of: tasks, workers: 2, order: .fifo) == 4)
    }

    @Test func noTasksTakeNoTime() throws {
        #expect(try ScheduleSimulation.makespan(of: [], workers: 1) == 0)
    }

    @Test func invalidInputIsATaskGraphError() {
        let noWorkers = #expect(throws: TaskGraphError.self) {
            try ScheduleSimulation.makespan(of: [task("a", 1)], workers: 0)
        }
        #expect(noWorkers?.code == .invalidLimit)
        #expect(noWorkers?.message.contains("got 0") == true, "\(String(describing: noWorkers))")
        let cycle = #expect(throws: TaskGraphError.self) {
            try ScheduleSimulation.makespan(of: [task("a", 1, after: "b"), task("b", 1, after: "a")], workers: 1)
        }
        #expect(cycle != nil)
    }
}
