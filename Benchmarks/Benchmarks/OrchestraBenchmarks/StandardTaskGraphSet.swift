import Foundation
@_spi(Simulation) import Orchestra

/// The Standard Task Graph Set's 180 random graphs of 50 tasks, with their proven optimal
/// schedule lengths on 2, 4, 8 and 16 workers (Kasahara Laboratory; CC0). The data lives with
/// the library's tests, in `Tests/Data/stg/50/`, described in `Tests/Data/stg/README.md`; it is
/// found from this file's path, so the benchmarks read it from the checkout they were built in.
enum StandardTaskGraphSet {
    struct Case: Sendable {
        var graph: String
        var workers: Int
        /// The proven optimal length; where the optimum is not known (51 of the 720 cases, a
        /// fourth column in `optimal.csv`), a lower bound of it, so a ratio to it is pessimistic.
        var optimal: Double
        /// Where the optimum is not known, the best length found (an upper bound of it).
        var bestKnown: Double?
    }

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // OrchestraBenchmarks
        .deletingLastPathComponent()  // Benchmarks (the targets' folder)
        .deletingLastPathComponent()  // Benchmarks (the package)
        .deletingLastPathComponent()  // the repository
        .appendingPathComponent("Tests/Data/stg/50")

    /// Every (graph, workers, optimal length) of `optimal.csv`: 720 cases. Most lines have three
    /// fields; a line with four gives a lower and an upper bound where the optimum is not known.
    static func cases() throws -> [Case] {
        let text = try String(contentsOf: directory.appendingPathComponent("optimal.csv"), encoding: .utf8)
        return try text.split(whereSeparator: \.isNewline).dropFirst().map { line in
            let fields = line.split(separator: ",")
            guard fields.count == 3 || fields.count == 4, let workers = Int(fields[1]), let optimal = Double(fields[2])
            else {
                throw StandardTaskGraphError(description: "optimal.csv: cannot read \"\(line)\"")
            }
            let bestKnown = fields.count == 4 ? Double(fields[3]) : nil
            return Case(graph: String(fields[0]), workers: workers, optimal: optimal, bestKnown: bestKnown)
        }
    }

    /// The tasks of one `.stg` file, dummy entry and exit included (they take no time). Task
    /// `k` has the id "t`k`"; its duration is the file's processing time, in units.
    static func tasks(of graph: String) throws -> [ScheduleSimulation.Task] {
        let text = try String(contentsOf: directory.appendingPathComponent(graph), encoding: .utf8)
        let lines = text.split(whereSeparator: \.isNewline).map {
            $0.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        }
        guard let taskCount = lines.first?.first, lines.count >= taskCount + 3 else {
            throw StandardTaskGraphError(description: "\(graph): not an STG file")
        }
        return try lines[1...(taskCount + 2)].map { fields in
            guard fields.count >= 3, fields.count == 3 + fields[2] else {
                throw StandardTaskGraphError(description: "\(graph): bad task line \(fields)")
            }
            return ScheduleSimulation.Task(
                id: "t\(fields[0])", duration: Double(fields[1]), dependencies: fields[3...].map { "t\($0)" })
        }
    }
}

/// Unreadable data, or a real run that did not succeed; package-benchmark reports it as the
/// benchmark's failure.
struct StandardTaskGraphError: Error, CustomStringConvertible {
    var description: String
}
