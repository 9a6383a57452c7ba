import Foundation

/// What a handler knows about the attempt it runs: which job, which attempt, the key to pass
/// to the outside world, and its dependencies' outputs.
public struct JobContext: Sendable {
    /// The run's id.
    public let runID: String
    /// The job's id in the run.
    public let jobID: String
    /// This attempt's number: 1 for the first. An attempt cut short by a crash counts, so the
    /// number after a restart is higher than the attempts the job's handler saw end.
    public let attempt: Int
    private let dependencyOutputs: [String: Data]
    /// Where the queue learns whether this attempt started (``markWaiting()``,
    /// ``markStarted()``); `nil` outside a queue.
    private let starts: AttemptStarts?

    init(_ job: ClaimedJob, starts: AttemptStarts? = nil) {
        runID = job.key.runID
        jobID = job.key.jobID
        attempt = job.attempt
        dependencyOutputs = job.dependencyOutputs
        self.starts = starts
    }

    /// Says that the handler waits before its effect begins (for a connection slot, a rate
    /// limit): if the worker gives the job back now (a graceful stop whose grace period ran
    /// out), a ``DurableJobOptions/atMostOnce`` job is made ready again rather than
    /// ``DurableJobState/uncertain``, since nothing was sent. Call ``markStarted()`` right
    /// before the effect. Without either call, the attempt counts as started when its handler
    /// is called. Nothing changes for a job that may run more than once.
    public func markWaiting() {
        _ = starts?.mark(JobKey(runID: runID, jobID: jobID), attempt: attempt, started: false)
    }

    /// Says that the job's effect begins now (the request is about to be sent), after
    /// ``markWaiting()``: from now on a give-back ends a ``DurableJobOptions/atMostOnce`` job
    /// ``DurableJobState/uncertain``.
    ///
    /// - Throws: `CancellationError` if the worker gave the job back while the handler waited:
    ///   the job is ready for another attempt, so this one must not begin its effect.
    public func markStarted() throws {
        guard starts?.mark(JobKey(runID: runID, jobID: jobID), attempt: attempt, started: true) ?? true else {
            throw CancellationError()
        }
    }

    /// `run id/job id/attempt`: unique per attempt. Jobs run at least once, so an attempt may
    /// repeat work a crashed attempt already did; pass the key where the outside world can
    /// recognise a repeat (an `Idempotency-Key` header, a unique column).
    public var idempotencyKey: String { "\(runID)/\(jobID)/\(attempt)" }

    /// `run id/job id`: the same for every attempt of the job, for a side effect that must
    /// happen once whatever attempt makes it.
    public var jobKey: String { "\(runID)/\(jobID)" }

    /// The output of `dependency`, one of this job's dependencies.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/typeMismatch``) if `dependency` is not
    ///   a dependency of this job or its output is not an `Output`.
    public func output<Output>(of dependency: JobHandle<Output>) throws(DurableError) -> Output {
        guard let data = dependencyOutputs[dependency.id] else {
            throw DurableError(
                code: .typeMismatch,
                message: "job '\(jobID)' does not depend on '\(dependency.id)': its output is not here")
        }
        return try decodeOutput(data, of: dependency.id)
    }
}
