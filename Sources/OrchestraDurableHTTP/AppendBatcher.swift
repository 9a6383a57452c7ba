import Orchestra
import OrchestraDurable

/// Appends the jobs of concurrent requests to the open run in batches: the first caller to
/// find no append under way appends every job waiting, in one transaction, then hands the
/// next batch to one of the callers that waited meanwhile. Each request then costs the store a
/// share of a transaction rather than one of its own.
final class AppendBatcher: Sendable {
    /// What a waiting caller is told: how its batch's append ended (whether every job of the
    /// batch was added, none there already, or the error), or that it is to append the next
    /// batch.
    private enum Turn: Sendable {
        case appended(Result<Bool, any Error>)
        case lead
    }

    private struct Waiter: Sendable {
        var job: DurableGraph.Job
        var continuation: CheckedContinuation<Turn, Never>
    }

    private struct State: Sendable {
        var waiting: [Waiter] = []
        var appending = false
        var added = 0
        var existing = 0
    }

    private let queue: DurableQueue
    private let runID: String
    private let state = Locked(State())

    init(queue: DurableQueue, runID: String) {
        self.queue = queue
        self.runID = runID
    }

    /// Jobs appended, and jobs the run had already (appended by an earlier coordinator).
    var counts: (added: Int, existing: Int) { state.withLock { ($0.added, $0.existing) } }

    /// Appends `job` to the run, with the jobs of the callers waiting at the same time.
    ///
    /// Cancellation: the append is not interrupted (one short transaction, which may hold the jobs
    /// of other callers too): a cancelled caller is told so once its job is appended.
    ///
    /// - Returns: Whether the job was added, not found in the run already (when its batch had
    ///   jobs of both, `false`: it may have been either).
    /// - Throws: The store's error, for every job of the batch.
    func append(_ job: DurableGraph.Job) async throws -> Bool {
        let turn = await withCheckedContinuation { continuation in
            // Waits, or leads, decided under the lock the leader hands its lead over under.
            let leads = state.withLock { state in
                if state.appending {
                    state.waiting.append(Waiter(job: job, continuation: continuation))
                    return false
                }
                state.appending = true
                return true
            }
            if leads { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .appended(let result): return try result.get()
        case .lead: return try await lead(with: job).get()
        }
    }

    /// Appends `graph`'s jobs to the run; returns how many were new. A job is named by what it
    /// is (a step's label), not by its bytes: a job the run has under the same id with another
    /// input (a multipart boundary drawn again, a timestamp) is that request's job, already
    /// there. The store refuses such a batch whole, so it is then appended one job at a time
    /// (only on a resume whose requests' bytes changed).
    private func append(_ graph: DurableGraph) async throws -> Int {
        do {
            return try await queue.append(graph, to: runID)
        } catch let error as DurableError where error.code == .runIDInUse {
            guard graph.jobs.count > 1 else { return 0 }
            var added = 0
            for job in graph.jobs {
                var one = DurableGraph()
                one.jobs = [job]
                added += try await append(one)
            }
            return added
        }
    }

    /// Appends `job` and the jobs waiting now, tells their callers, and passes the lead on.
    private func lead(with job: DurableGraph.Job) async -> Result<Bool, any Error> {
        let batch = state.withLock { state in
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        var graph = DurableGraph()
        graph.jobs = [job] + batch.map(\.job)
        let result: Result<Bool, any Error>
        do {
            // Its own task: the batch holds other callers' jobs, so the leader's cancellation
            // must not cut it short (a store's operation is cancelled with its caller).
            let added = try await Task { [graph] in try await append(graph) }.value
            state.withLock {
                $0.added += added
                $0.existing += graph.jobs.count - added
            }
            result = .success(added == graph.jobs.count)
        } catch {
            result = .failure(error)
        }
        for waiter in batch { waiter.continuation.resume(returning: .appended(result)) }
        // The next batch is led by a caller that came meanwhile, if one did.
        let next = state.withLock { state -> CheckedContinuation<Turn, Never>? in
            guard !state.waiting.isEmpty else {
                state.appending = false
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume(returning: .lead)
        return result
    }
}
