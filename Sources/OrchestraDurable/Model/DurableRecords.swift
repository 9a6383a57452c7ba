import Foundation

/// Where a job of a durable run stands.
public enum DurableJobState: String, Sendable, Hashable, CaseIterable {
    /// Waiting for its dependencies.
    case blocked
    /// Ready to be claimed (at its scheduled time, for a retry).
    case ready
    /// Claimed by a worker, whose lease has an expiry.
    case running
    /// Ended with an output.
    case succeeded
    /// Ended with an error, every attempt used (or the error was not retryable).
    case failed
    /// A dependency failed, so it never ran.
    case skipped
    /// The run was cancelled (or stopped at a failure under fail-fast) before it ended.
    case cancelled
    /// May have had its effect, and is not run again: a job with
    /// ``DurableJobOptions/atMostOnce`` whose worker lost its lease, or gave the job back after
    /// its handler had started. It counts as a failure (its dependents are skipped, the run
    /// fails) until ``DurableQueue/resendUncertain(runID:)`` makes it ready again.
    case uncertain

    /// Whether the job has ended for good (an ``uncertain`` job until it is sent again on
    /// demand).
    public var isTerminal: Bool {
        switch self {
        case .blocked, .ready, .running: false
        case .succeeded, .failed, .skipped, .cancelled, .uncertain: true
        }
    }
}

/// Where a durable run stands.
public enum DurableRunState: String, Sendable, Hashable, CaseIterable {
    /// Some job has not ended.
    case running
    /// Every job succeeded.
    case succeeded
    /// Every job ended and at least one failed, or is ``DurableJobState/uncertain`` (or was
    /// skipped or cancelled for it).
    case failed
    /// Cancelled by ``DurableQueue/cancel(runID:)``.
    case cancelled

    /// Whether the run has ended for good.
    public var isTerminal: Bool { self != .running }
}

/// One job of a run as its store records it.
public struct DurableJobRecord: Sendable, Hashable {
    /// The job's id.
    public var id: String
    /// Its kind's name.
    public var kind: String
    /// Its input, as JSON.
    public var input: Data
    /// Where it stands.
    public var state: DurableJobState
    /// Attempts started so far (an attempt cut short by a crash counts).
    public var attempts: Int
    /// The last attempt's error, if it failed.
    public var error: String?
    /// Its output as JSON, once it succeeded.
    public var output: Data?
    /// When it may be claimed next (a retry's scheduled time).
    public var runAt: Date?

    package init(
        id: String, kind: String, input: Data, state: DurableJobState, attempts: Int, error: String?, output: Data?,
        runAt: Date?
    ) {
        self.id = id
        self.kind = kind
        self.input = input
        self.state = state
        self.attempts = attempts
        self.error = error
        self.output = output
        self.runAt = runAt
    }

    /// The output decoded as `Output`.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/typeMismatch``) if there is none or it
    ///   does not decode as `Output`.
    public func output<Output: Decodable>(as type: Output.Type = Output.self) throws(DurableError) -> Output {
        guard let output else {
            throw DurableError(code: .typeMismatch, message: "job '\(id)' has no output: it is \(state.rawValue)")
        }
        return try decodeOutput(output, of: id)
    }
}

/// The output `data` of job `jobID`, decoded as `Output`.
///
/// - Throws: ``DurableError`` (``DurableError/Code/typeMismatch``) naming the job and the type.
func decodeOutput<Output: Decodable>(_ data: Data, of jobID: String) throws(DurableError) -> Output {
    do {
        return try JSONDecoder().decode(Output.self, from: data)
    } catch {
        throw DurableError(
            code: .typeMismatch, message: "the output of job '\(jobID)' is not a \(Output.self): \(error)",
            underlying: error)
    }
}

/// A durable run as its store records it.
public struct DurableRunRecord: Sendable, Hashable {
    /// The run's id.
    public var id: String
    /// Where it stands.
    public var state: DurableRunState
    /// How many of its jobs may run at once.
    public var limit: Int
    /// When it was submitted.
    public var created: Date
    /// When it ended, if it did.
    public var ended: Date?

    package init(id: String, state: DurableRunState, limit: Int, created: Date, ended: Date?) {
        self.id = id
        self.state = state
        self.limit = limit
        self.created = created
        self.ended = ended
    }
}

/// A run and how many of its jobs stand where: what `orchestra status` shows of a store.
public struct DurableRunSummary: Sendable, Hashable {
    /// The run.
    public var run: DurableRunRecord
    /// How many of its jobs are in each state (states with none are left out).
    public var jobs: [DurableJobState: Int]
    /// How many workers hold leases on its running jobs now.
    public var workers: Int

    package init(run: DurableRunRecord, jobs: [DurableJobState: Int], workers: Int) {
        self.run = run
        self.jobs = jobs
        self.workers = workers
    }
}
