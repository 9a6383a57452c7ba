import Foundation
import Orchestra

/// The jobs of a durable run and their dependencies, before it is submitted.
///
/// ```swift
/// var graph = DurableGraph()
/// let list = try graph.add("list", fetchList, input: ListRequest(page: 1))
/// let report = try graph.add("report", summarise, input: ReportRequest(), after: [list.id])
/// try await queue.submit(graph, runID: "nightly-2026-11-26")
/// ```
///
/// Inputs are encoded as JSON when they are added, so what is submitted is exactly what a
/// restarted process reads back. ``DurableQueue/submit(_:runID:limit:resourceLimits:resourceRates:failurePolicy:)`` checks
/// the graph as `TaskGraph` does (duplicate ids, unknown dependencies, cycles named by their
/// path) before anything is stored.
public struct DurableGraph: Sendable {
    /// One job as it is stored.
    package struct Job: Sendable, Hashable {
        package var id: String
        package var kind: String
        package var input: Data
        package var dependencies: [String]
        package var options: DurableJobOptions
    }

    package var jobs: [Job] = []

    /// Keys sorted: the same input is the same bytes in every process (without it, key order
    /// follows each process's hash seed, and a restarted program's resubmission of the same
    /// graph was refused as another graph).
    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// An empty graph.
    public init() {}

    /// The ids of the jobs, in the order they were added.
    public var jobIDs: [String] { jobs.map(\.id) }

    /// Adds job `id` of `kind` with `input`, to run once every job in `dependencies` succeeded.
    ///
    /// - Parameters:
    ///   - id: The job's id, unique in the run.
    ///   - kind: Its kind; a handler for it must be registered on the queue that runs it.
    ///   - input: Its input, stored as JSON.
    ///   - dependencies: The ids of jobs that must succeed first (``JobHandle/id``).
    ///   - options: Priority, time limit per attempt, retries.
    /// - Returns: A handle to pass to dependents and to read the output with.
    /// - Throws: `EncodingError` if `input` cannot be encoded.
    @discardableResult
    public mutating func add<Input, Output>(
        _ id: String, _ kind: JobKind<Input, Output>, input: Input, after dependencies: [String] = [],
        options: DurableJobOptions = DurableJobOptions()
    ) throws -> JobHandle<Output> {
        let encoded = try Self.encoder.encode(input)
        jobs.append(Job(id: id, kind: kind.name, input: encoded, dependencies: dependencies, options: options))
        return JobHandle(id: id)
    }

    /// Checks the graph as `TaskGraph` checks its nodes (and costs), each job's options, and
    /// that every resource a job uses has a limit or is `rated` (unless `resourceLimits` is `nil`: jobs
    /// appended to an open run, whose store checks them against the run's);
    /// returns each job's longest remaining path, the order jobs ready at once start in.
    ///
    /// - Throws: ``DurableError`` with code ``DurableError/Code/invalidGraph`` naming the job,
    ///   the dependency or the cycle's path.
    func validate(resourceLimits: [String: Int]? = [:], rated: Set<String> = []) throws(DurableError) -> [Double] {
        for (name, limit) in (resourceLimits ?? [:]).sorted(by: { $0.key < $1.key }) where limit < 1 {
            throw DurableError(
                code: .invalidGraph, message: "resource '\(name)': its limit must be at least 1, got \(limit)")
        }
        let graph = TaskGraph()
        for job in jobs {
            if let resourceLimits,
                let unknown = job.options.resources.first(where: { resourceLimits[$0] == nil && !rated.contains($0) })
            {
                throw DurableError(
                    code: .invalidGraph,
                    message:
                        "job '\(job.id)' uses the resource '\(unknown)', which has no limit in resourceLimits nor rate in resourceRates"
                )
            }
            graph.add(id: job.id, dependsOn: job.dependencies, options: NodeOptions(cost: job.options.cost)) { _ in }
            if job.options.retry.maxAttempts < 1 {
                throw DurableError(
                    code: .invalidGraph,
                    message:
                        "job '\(job.id)': retry.maxAttempts must be at least 1, got \(job.options.retry.maxAttempts)")
            }
            if let timeout = job.options.timeout, timeout <= .zero {
                throw DurableError(
                    code: .invalidGraph, message: "job '\(job.id)': timeout must be positive, got \(timeout)")
            }
        }
        do {
            return try graph.criticalPathLengths()
        } catch {
            throw DurableError(
                code: .invalidGraph, message: "the graph cannot run: \(error.message)", underlying: error)
        }
    }
}
