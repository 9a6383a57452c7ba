import Foundation
import Orchestra

/// Waits for the outcomes of jobs of one run, as ``DurableQueue/withOutcomes(of:_:)`` gives it:
/// many tasks may wait at once, and one query looks for their jobs whenever an outcome may have
/// been recorded (by a worker of this queue, or, on a shared store, of any process): for the
/// jobs newly waited for and those the change named (``OutcomeNotice``), or for every one when
/// it named none.
public final class DurableOutcomes: Sendable {
    private struct State: Sendable {
        var waiters: [String: [Int: CheckedContinuation<DurableJobRecord, any Error>]] = [:]
        var next = 0
        /// The jobs to look at next: waited for since the last look, or named by a change since.
        var toLook: Set<String> = []
        /// Whether the next look is at every job waited for (a change that named none).
        var looksAtAll = false
        /// The jobs being appended to be waited for (``wait(for:appendingWith:)``), each with
        /// the number of its callers: a change that names one, or names none, is kept in
        /// `toLook` until its waiter is in place.
        var expected: [String: Int] = [:]

        mutating func unexpect(_ jobID: String) {
            expected[jobID, default: 1] -= 1
            if expected[jobID] == 0 { expected[jobID] = nil }
        }
    }

    /// The run whose jobs are waited for.
    public let runID: String
    private let state = Locked(State())
    /// Counts what may have changed: an outcome recorded, a waiter added. The watcher looks
    /// again after each.
    let changes = AwaitedState(0)

    init(runID: String) {
        self.runID = runID
    }

    /// Waits until job `jobID` of the run has ended (succeeded, failed for good, skipped,
    /// cancelled, or uncertain: ``DurableJobOptions/atMostOnce``) and returns it as stored. Call
    /// it once the job was submitted or appended.
    ///
    /// Cancellation: cancelling the waiting task throws `CancellationError`; the job goes on.
    ///
    /// - Throws: ``DurableError`` (``DurableError/Code/unknownJob``) if the run has no such job;
    ///   the store's errors; `CancellationError`.
    public func wait(for jobID: String) async throws -> DurableJobRecord {
        try await waitAfterAppend(for: jobID, new: false)
    }

    /// Appends job `jobID` with `append`, then waits for its outcome as ``wait(for:)`` does.
    /// `append` returns whether it added the job (`false`: the run had it already, and it may
    /// have ended). A job just added cannot have ended yet, so it is not read until a change
    /// names it, where ``wait(for:)`` after an append reads it at once too: one read of the store
    /// less per job.
    ///
    /// ```swift
    /// let record = try await outcomes.wait(for: "page-2") {
    ///     var graph = DurableGraph()
    ///     try graph.add("page-2", fetch, input: url)
    ///     return try await queue.append(graph, to: "crawl") == 1
    /// }
    /// ```
    ///
    /// Cancellation and errors: as ``wait(for:)``, and `append`'s own.
    public func wait(
        for jobID: String, appendingWith append: () async throws -> Bool
    ) async throws -> DurableJobRecord {
        // Expected from now on: a change that names the job while it is being appended, or
        // before its waiter is in place, is kept for it.
        state.withLock { $0.expected[jobID, default: 0] += 1 }
        let new: Bool
        do {
            new = try await append()
        } catch {
            state.withLock { $0.unexpect(jobID) }
            throw error
        }
        return try await waitAfterAppend(for: jobID, new: new, expected: true)
    }

    /// Waits for `jobID`, read at once unless it is `new` (and nothing named it meanwhile);
    /// `expected`: the job was expected (``wait(for:appendingWith:)``), and no longer is.
    private func waitAfterAppend(for jobID: String, new: Bool, expected: Bool = false) async throws -> DurableJobRecord
    {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let (cancelled, look) = state.withLock { state in
                    if expected { state.unexpect(jobID) }
                    if Task.isCancelled { return (true, false) }
                    state.waiters[jobID, default: [:]][id] = continuation
                    if !new { state.toLook.insert(jobID) }
                    return (false, state.toLook.contains(jobID))
                }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                } else if look {
                    changes.update { $0 += 1 }
                }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<DurableJobRecord, any Error>? in
                defer { if state.waiters[jobID]?.isEmpty == true { state.waiters[jobID] = nil } }
                return state.waiters[jobID]?.removeValue(forKey: id)
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// The ids of the jobs waited for now.
    var awaited: [String] { state.withLock { Array($0.waiters.keys) } }

    /// Whether a job is waited for.
    var isWaiting: Bool { state.withLock { !$0.waiters.isEmpty } }

    /// Takes note of a change, `notice`, for the next look, and wakes the watcher if it named a
    /// job waited for (or about to be), or none.
    func changed(_ notice: OutcomeNotice) {
        let concerned = state.withLock { state in
            switch notice {
            case .any:
                state.looksAtAll = true
                state.toLook.formUnion(state.expected.keys)
                return true
            case .jobs(let keys):
                var concerned = false
                for key in keys
                where key.runID == runID && (state.waiters[key.jobID] != nil || state.expected[key.jobID] != nil) {
                    state.toLook.insert(key.jobID)
                    concerned = true
                }
                return concerned
            }
        }
        if concerned { changes.update { $0 += 1 } }
    }

    /// The ids of the jobs to look at now (every job waited for, or those waited for since the
    /// last look and those named since), forgetting them but for those still expected: a change
    /// during the look is looked at next time.
    func takeJobsToLookAt() -> [String] {
        state.withLock { state in
            let jobs =
                state.looksAtAll ? Array(state.waiters.keys) : state.toLook.filter { state.waiters[$0] != nil }
            state.toLook = state.toLook.filter { state.expected[$0] != nil }
            state.looksAtAll = false
            return jobs
        }
    }

    /// Resumes the waiters of every job of `records` that has ended, and fails those of the
    /// `asked` jobs the run does not have.
    func settle(_ records: [DurableJobRecord], asked: [String]) {
        let missing = Set(asked).subtracting(records.map(\.id))
        var resumed: [(CheckedContinuation<DurableJobRecord, any Error>, Result<DurableJobRecord, any Error>)] = []
        state.withLock { state in
            for record in records where record.state.isTerminal {
                for waiter in (state.waiters.removeValue(forKey: record.id) ?? [:]).values {
                    resumed.append((waiter, .success(record)))
                }
            }
            for id in missing {
                let error = DurableError(code: .unknownJob, message: "run '\(runID)' has no job '\(id)'")
                for waiter in (state.waiters.removeValue(forKey: id) ?? [:]).values {
                    resumed.append((waiter, .failure(error)))
                }
            }
        }
        for (waiter, result) in resumed { waiter.resume(with: result) }
    }

    /// Fails every waiter now with `error`.
    func fail(_ error: any Error) {
        let waiters = state.withLock { state in
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap(\.values)
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }
}
