import Benchmark
import Foundation
@_spi(Simulation) import Orchestra

/// Benchmarks 5 and 6: scheduling quality on the Standard Task Graph Set (see
/// ``StandardTaskGraphSet``), simulated and for real.
///
/// Not timing benchmarks: each runs its body once and prints its figures, one line each starting
/// with "STG ", from its teardown (`ratios.py` repeats those lines and checks the targets from
/// them). The wall-clock metric is only the time the body took.
///
/// - `Graph STG/simulated 720 cases`: `ScheduleSimulation.makespan(of:workers:order:)`, the
///   scheduler's own state machine in a discrete-event simulation, for all 180 graphs × 2, 4, 8
///   and 16 workers, with `.criticalPath` (Orchestra's order) and `.fifo`; the mean and worst
///   makespan ÷ optimal of each, over all cases (where the optimum is unknown, over its lower
///   bound, as the library's test does) and over the 669 cases with a proven optimum, and per
///   worker count. Target for `.criticalPath`: mean ≤ 1.01, worst ≤ 1.25.
/// - `Graph STG/real 1 ms per unit`: the first five graphs run for real on 4 workers
///   (`run(limit: 4)`), each task a `Task.sleep` of its processing time in milliseconds, cost
///   set to the same; the makespan (first start to last end, from the result's offsets) ÷
///   optimal, median of three runs per graph, beside the simulated figure for the same case.
enum StandardTaskGraphWorkload {
    static let realGraphs = ["rand0000.stg", "rand0001.stg", "rand0002.stg", "rand0003.stg", "rand0004.stg"]
    static let realWorkers = 4
    static let realRuns = 3
    /// The real duration of one unit of processing time.
    static let unit = Duration.milliseconds(1)

    /// The lines a benchmark's body computed, printed by its teardown: when package-benchmark
    /// runs without progress output (as `ratios.py` has it), it sends what the body prints to
    /// /dev/null, but not what the setup and teardown print.
    final class Report: @unchecked Sendable {  // `lines` is only touched under `lock`.
        private let lock = NSLock()
        private var lines: [String] = []

        func callAsFunction(_ line: String) {
            lock.withLock { lines.append(line) }
        }

        /// Writes the lines straight to the standard output, unbuffered, so they come out whole
        /// and before package-benchmark's own report; then forgets them.
        func print() {
            let text = lock.withLock { () -> String in
                defer { lines.removeAll() }
                return lines.map { $0 + "\n" }.joined()
            }
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    struct Summary {
        var count = 0
        var sum = 0.0
        var worst = 0.0
        var worstCase = ""

        mutating func add(_ ratio: Double, _ name: String) {
            count += 1
            sum += ratio
            if ratio > worst { (worst, worstCase) = (ratio, name) }
        }

        var text: String {
            "cases=\(count) mean=\(String(format: "%.4f", sum / Double(max(count, 1)))) "
                + "worst=\(String(format: "%.4f", worst)) worst_case=\(worstCase)"
        }
    }

    static func simulate(report: Report) throws {
        let cases = try StandardTaskGraphSet.cases()
        var graphs: [String: [ScheduleSimulation.Task]] = [:]
        let orders: [(name: String, order: ScheduleSimulation.Order)] = [
            ("criticalPath", .criticalPath), ("fifo", .fifo),
        ]
        let workerCounts = Array(Set(cases.map(\.workers))).sorted()
        var overall = [Summary](repeating: Summary(), count: orders.count)
        var proven = [Summary](repeating: Summary(), count: orders.count)
        var byWorkers = [[Int: Summary]](repeating: [:], count: orders.count)
        var belowOptimal: [String] = []
        for item in cases {
            if graphs[item.graph] == nil { graphs[item.graph] = try StandardTaskGraphSet.tasks(of: item.graph) }
            let name = "\(item.graph)@\(item.workers)"
            for (index, order) in orders.enumerated() {
                let makespan = try ScheduleSimulation.makespan(
                    of: graphs[item.graph]!, workers: item.workers, order: order.order)
                if makespan < item.optimal {
                    belowOptimal.append("\(name) \(order.name): \(makespan) < \(item.optimal)")
                }
                overall[index].add(makespan / item.optimal, name)
                if item.bestKnown == nil { proven[index].add(makespan / item.optimal, name) }
                byWorkers[index][item.workers, default: Summary()].add(makespan / item.optimal, name)
            }
        }
        let unknown = cases.filter { $0.bestKnown != nil }.count
        report(
            "STG data: cases=\(cases.count) graphs=\(graphs.count) optimum_unknown=\(unknown) (ratios there are to its lower bound)"
        )
        for (index, order) in orders.enumerated() {
            report("STG simulated \(order.name): \(overall[index].text)")
            report("STG simulated \(order.name) proven optimum only: \(proven[index].text)")
            for workers in workerCounts {
                report("STG simulated \(order.name) \(workers) workers: \(byWorkers[index][workers]!.text)")
            }
        }
        // A makespan below the optimum (or its lower bound) would mean the simulation or the data is wrong.
        for problem in belowOptimal { report("STG simulated ERROR below the optimum: \(problem)") }
    }

    static func runForReal(report: Report) async throws {
        let optimal = Dictionary(
            try StandardTaskGraphSet.cases().filter { $0.workers == realWorkers }.map { ($0.graph, $0.optimal) },
            uniquingKeysWith: { first, _ in first }
        )
        var summary = Summary()
        for name in realGraphs {
            let tasks = try StandardTaskGraphSet.tasks(of: name)
            guard let best = optimal[name] else {
                throw StandardTaskGraphError(description: "\(name): no optimum for \(realWorkers) workers")
            }
            let simulated = try ScheduleSimulation.makespan(of: tasks, workers: realWorkers, order: .criticalPath)
            var runs: [Double] = []
            for _ in 0..<realRuns { runs.append(try await realMakespan(of: tasks, workers: realWorkers) / unit) }
            let median = runs.sorted()[runs.count / 2]
            summary.add(median / best, "\(name)@\(realWorkers)")
            report(
                "STG real \(name) \(realWorkers) workers: optimal=\(Int(best)) simulated=\(Int(simulated)) "
                    + "real_ms=\(String(format: "%.1f", median)) ratio=\(String(format: "%.4f", median / best)) "
                    + "simulated_ratio=\(String(format: "%.4f", simulated / best)) "
                    + "runs_ms=\(runs.map { String(format: "%.1f", $0) }.joined(separator: "/"))"
            )
        }
        report("STG real \(realWorkers) workers: \(summary.text)")
    }

    /// Runs the graph for real, `unit` per unit of processing time, and returns the time from
    /// its first start to its last end.
    static func realMakespan(of tasks: [ScheduleSimulation.Task], workers: Int) async throws -> Duration {
        let graph = TaskGraph()
        for task in tasks {
            let sleep = unit * task.duration
            graph.add(id: task.id, dependsOn: task.dependencies, options: NodeOptions(cost: task.duration)) { _ in
                if sleep > .zero { try await Task.sleep(for: sleep) }
            }
        }
        let result = try await graph.run(limit: workers)
        let outcomes = result.nodeIDs.compactMap { result.outcome(id: $0) }
        guard result.allSucceeded, let first = outcomes.compactMap(\.started).min(),
            let last = outcomes.compactMap(\.ended).max()
        else {
            throw StandardTaskGraphError(description: "a real STG run did not succeed: \(result.problems)")
        }
        return last - first
    }
}

func registerStandardTaskGraphBenchmarks() {
    let once = Benchmark.Configuration(
        metrics: [.wallClock], warmupIterations: 0, maxDuration: .seconds(60), maxIterations: 1)

    let simulated = StandardTaskGraphWorkload.Report()
    Benchmark(
        "Graph STG/simulated 720 cases", configuration: once,
        closure: { _ in
            try StandardTaskGraphWorkload.simulate(report: simulated)
        }, teardown: { simulated.print() })

    let real = StandardTaskGraphWorkload.Report()
    Benchmark(
        "Graph STG/real 1 ms per unit", configuration: once,
        closure: { _ in
            try await StandardTaskGraphWorkload.runForReal(report: real)
        }, teardown: { real.print() })
}
