import Foundation
import HTTPTypes
import Orchestra
import OrchestraDurable
import OrchestraHTTP

/// The transport of `orchestra run --state postgres://…`: each request is appended to the
/// run as a job, sent by whichever `orchestra worker` claims it, and its response read back
/// from the job's output. The run's limits (the workflow's `limit`, and each host limit as a
/// resource) hold in the store across all workers.
///
/// A job's id is the digest of the request (method, URL, headers, body) and how many identical
/// requests this run sent before it: a coordinator started again with the same `--run-id`
/// sends the same requests in the same way, so the ones that have an outcome already are
/// read back, not sent again.
final class DurableHTTPTransport: HTTPTransport {
    let queue: DurableQueue
    let runID: String
    let outcomes: DurableOutcomes
    /// The run's resource for requests to an authority (`host:port`), if it has a limit.
    let resource: @Sendable (String) -> String?
    let maximumConnectionsPerHost: Int
    /// How long a worker may take over a request sent without a timeout (the login's):
    /// ``DistributedRun/jobTimeout``. A step's request comes with the step's timeout
    /// (``send(_:content:progress:timeout:)``).
    let jobTimeout: Duration
    private let occurrences = Locked([String: Int]())
    private let batcher: AppendBatcher
    private let unanswered = Locked(0)

    /// Requests handed to workers; requests whose job an earlier coordinator of the run had
    /// appended (their outcome, if stored, is read back rather than sent again); requests that
    /// got no response (a transport error on the worker, or a job that did not succeed).
    var counts: (appended: Int, reused: Int, unanswered: Int) {
        let (added, existing) = batcher.counts
        return (added, existing, unanswered.withLock { $0 })
    }

    init(
        queue: DurableQueue, runID: String, outcomes: DurableOutcomes, maximumConnectionsPerHost: Int,
        jobTimeout: Duration, resource: @escaping @Sendable (String) -> String?
    ) {
        self.jobTimeout = jobTimeout
        self.queue = queue
        self.runID = runID
        self.outcomes = outcomes
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.resource = resource
        batcher = AppendBatcher(queue: queue, runID: runID)
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await send(request, body: body, jobTimeout: jobTimeout)
    }

    /// Gives up on the request after `timeout`, and its worker with it: the job carries
    /// `timeout` as its time limit, so a request the coordinator gave up on does not hold a
    /// worker's slot and its host's place in the limit while the server never answers.
    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
    ) async throws -> (HTTPResponse, Data) {
        let body = try content?.contents()
        let (response, data) = try await withTimeout(timeout) {
            try await self.send(request, body: body, jobTimeout: timeout)
        }
        progress?(data.count, data.count)
        return (response, data)
    }

    private func send(_ request: HTTPRequest, body: Data?, jobTimeout: Duration) async throws -> (HTTPResponse, Data) {
        if let body, body.count > HTTPJob.maximumBodySize {
            throw HTTPTransportError(
                code: .invalidRequest,
                message:
                    "the request body is \(body.count) bytes; a request handed to a worker carries at most \(HTTPJob.maximumBodySize) (16 MB)",
                host: request.authority)
        }
        // The job's input as the graph encodes it (keys sorted: the same request, the same
        // bytes), named after it.
        var graph = DurableGraph()
        try graph.add(
            "", HTTPJob.kind, input: HTTPJob.Request(request, body: body),
            options: DurableJobOptions(
                resources: request.authority.flatMap(resource).map { [$0] } ?? [],
                timeout: jobTimeout))
        var job = graph.jobs[0]
        let digest = String(String(decoding: job.input, as: UTF8.self).sha256Hex.prefix(20))
        let occurrence = occurrences.withLock { counts in
            counts[digest, default: 0] += 1
            return counts[digest]!
        }
        job.id = "\(request.method.rawValue)-\(digest)-\(occurrence)"
        try await batcher.append(job)
        let record = try await outcomes.wait(for: job.id)
        do {
            guard record.state == .succeeded else {
                throw HTTPTransportError(
                    code: .other,
                    message: "the job of this request \(record.state.rawValue): \(record.error ?? "no reason stored")",
                    host: request.authority)
            }
            return try record.output(as: HTTPJob.Outcome.self).result()
        } catch {
            unanswered.withLock { $0 += 1 }
            throw error
        }
    }
}
