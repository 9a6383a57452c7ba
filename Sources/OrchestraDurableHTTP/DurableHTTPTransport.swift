public import Foundation
public import HTTPTypes
import Orchestra
public import OrchestraDurable
public import OrchestraHTTP

/// A transport that hands each request to durable workers: the request is appended to an
/// open run as an ``HTTPJob``, sent by whichever worker claims it (a process of its own, on
/// this machine or another, or a worker of this process), and its response read back from the
/// job's output. The run's limits (its `limit`, and each resource's) hold in the store across
/// all workers.
///
/// Put it under an `HTTPCoordinator` to keep everything the coordinator does (retries,
/// redirects, tokens, limits per host) in this process while the requests go to the workers:
///
/// ```swift
/// let queue = DurableQueue(store: store, worker: "producer")
/// try await queue.open(runID: "sync", limit: 16, resourceLimits: ["host:api.example.com": 4])
/// try await queue.withOutcomes(of: "sync") { outcomes in
///     let transport = DurableHTTPTransport(
///         queue: queue, runID: "sync", outcomes: outcomes,
///         resource: { request in request.authority == "api.example.com" ? "host:api.example.com" : nil })
///     let coordinator = HTTPCoordinator(transport: transport)
///     let (response, body) = try await coordinator.send(request)
/// }
/// try await queue.close(runID: "sync")
/// ```
///
/// A job's id names the request, so that a producer started again on the same run reads back
/// the outcomes stored already instead of sending those requests again:
///
/// - in ``withJobName(_:atMostOnce:isolation:_:)``, the name and the request's number in the
///   scope (`charge-42#1`, then `#2` for its retry), whatever its bytes: what the command
///   does, with each step's and element's label (`hit[109]`);
/// - in ``withFreshJobs(isolation:_:)``, a job of its own, never read back (a login);
/// - otherwise a digest of the request (method, URL, headers, body) and how many identical
///   requests this transport sent before it.
///
/// Each id starts with the transport's `jobPrefix`.
public final class DurableHTTPTransport: HTTPTransport {
    /// What the transport did so far.
    public struct Counts: Sendable, Hashable {
        /// Requests appended to the run as new jobs.
        public var appended: Int
        /// Requests whose job the run had already (appended by an earlier producer of the
        /// run): their stored outcome is read back, or awaited, rather than sent again.
        public var reused: Int
        /// Requests that got no response: a transport error on the worker, or a job that did
        /// not succeed.
        public var unanswered: Int

        /// Counts of each kind.
        public init(appended: Int = 0, reused: Int = 0, unanswered: Int = 0) {
            self.appended = appended
            self.reused = reused
            self.unanswered = unanswered
        }
    }

    let queue: DurableQueue
    let runID: String
    let outcomes: DurableOutcomes
    /// The run's resource for a request, if it has a limit.
    let resource: @Sendable (HTTPRequest) -> String?
    public let maximumConnectionsPerHost: Int
    /// How long a worker may take over a request sent without a timeout.
    let jobTimeout: Duration
    /// Put before every job id: the command's names the workflow (its digest), so that the
    /// same run id with another workflow file does not read another file's outcomes.
    let jobPrefix: String
    /// Occurrences of each unnamed request (by digest) sent so far.
    let occurrences = Locked([String: Int]())
    /// A name of this producer's own, for its fresh jobs.
    let producer = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let freshJobs = Locked(0)
    private let batcher: AppendBatcher
    private let unanswered = Locked(0)

    /// A transport that appends its requests to run `runID` of `queue` and reads their
    /// outcomes through `outcomes`.
    ///
    /// - Parameters:
    ///   - queue: The producer's queue over the store the workers claim from.
    ///   - runID: An open run (`DurableQueue.open(runID:limit:resourceLimits:resourceRates:failurePolicy:version:)`).
    ///   - outcomes: What `DurableQueue.withOutcomes(of:_:)` gives for `runID`.
    ///   - maximumConnectionsPerHost: What the transport reports to its coordinator: the
    ///     run's limit, so the coordinator's own limits are the ones that bind.
    ///   - jobTimeout: How long a worker may take over a request sent without a timeout; a
    ///     request with one carries its own (``send(_:content:progress:timeout:)``).
    ///   - resource: The run's resource (a name in the run's `resourceLimits`) a request
    ///     uses, or `nil` for none: usually one per host, named from the request's scheme and
    ///     authority.
    ///   - jobPrefix: Put before every job id (see ``withJobName(_:atMostOnce:isolation:_:)``):
    ///     a version of the producer's logic, so that a changed producer does not read the
    ///     outcomes of requests it no longer sends in the same way.
    public init(
        queue: DurableQueue, runID: String, outcomes: DurableOutcomes, maximumConnectionsPerHost: Int = 8,
        jobTimeout: Duration = .seconds(30),
        resource: @escaping @Sendable (HTTPRequest) -> String? = { _ in nil },
        jobPrefix: String = ""
    ) {
        self.jobPrefix = jobPrefix
        self.jobTimeout = jobTimeout
        self.queue = queue
        self.runID = runID
        self.outcomes = outcomes
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.resource = resource
        batcher = AppendBatcher(queue: queue, runID: runID)
    }

    /// What the transport did so far.
    public var counts: Counts {
        let (added, existing) = batcher.counts
        return Counts(appended: added, reused: existing, unanswered: unanswered.withLock { $0 })
    }

    /// Appends the request as a job and waits for its outcome, for as long as it takes.
    ///
    /// Cancellation: stops waiting and throws `CancellationError`; the job stays in the run
    /// (a worker may still send it) until the run is closed or cancelled.
    ///
    /// - Throws: `HTTPTransportError`: the worker's, or `other` when the job did not succeed;
    ///   `invalidRequest` for a body over ``HTTPJob/maximumBodySize``; the store's errors.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await send(request, body: body, jobTimeout: jobTimeout)
    }

    /// Sends the request with `timeout` as its job's time limit: `timeout` bounds each attempt
    /// on a worker, from when the worker claims the job, and the worker stops an attempt past
    /// it (so a server that never answers does not hold the worker's slot and its host's place
    /// in the limit). It does not bound the time the job waits for a worker, nor a failover:
    /// a job whose worker died is sent by another once its lease expires, with the whole
    /// `timeout` again, and this call waits for that outcome.
    ///
    /// Cancellation and errors: as ``send(_:body:)``; `TimeoutError` with `timeout` when the
    /// worker stopped the attempt at its time limit.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
    ) async throws -> (HTTPResponse, Data) {
        let body = try content?.contents()
        let (response, data) = try await send(request, body: body, jobTimeout: timeout)
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
                resources: resource(request).map { [$0] } ?? [],
                timeout: jobTimeout))
        var job = graph.jobs[0]
        (job.id, job.options.atMostOnce) = jobID(method: request.method.rawValue, input: job.input)
        let record = try await outcomes.wait(for: job.id) { try await batcher.append(job) }
        do {
            if record.state == .uncertain {
                throw HTTPJobUncertainError(
                    method: request.method.rawValue, jobID: job.id,
                    reason: record.error ?? "may have been sent: its worker stopped while sending it")
            }
            // The worker's queue stops an attempt at the job's time limit and records the
            // `TimeoutError` it threw as the job's error: the same error here, as a transport
            // that sends the request itself would throw.
            if record.state == .failed, record.error == "\(TimeoutError(timeout: jobTimeout))" {
                throw TimeoutError(timeout: jobTimeout)
            }
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
