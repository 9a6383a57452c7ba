/// Where a queue's running attempts leave their outcomes for the worker loop, which settles
/// every outcome waiting in one store transaction; where a failure of the leases' renewal
/// stops the loop; and where a graceful stop, and the end of its grace period, wake it.
final class AttemptInbox: Sendable {
    private struct State: Sendable {
        var outcomes: [AttemptOutcome] = []
        var failure: (any Error)?
        var stopRequested = false
        var graceOver = false
        var workNotified = false
    }

    private let state = AwaitedState(State())

    /// Leaves an outcome; wakes the loop if it waits.
    func post(_ outcome: AttemptOutcome) {
        state.update { $0.outcomes.append(outcome) }
    }

    /// Stops the loop with `error` at its next wait.
    func fail(_ error: any Error) {
        state.update { $0.failure = $0.failure ?? error }
    }

    /// A graceful stop was requested: wakes a wait that asks for it.
    func requestStop() {
        state.update { $0.stopRequested = true }
    }

    /// Jobs may have become claimable: wakes a wait that asks for it (a worker with free
    /// slots), once.
    func notifyWork() {
        state.update { $0.workNotified = true }
    }

    /// The stop's grace period is over: wakes every wait from now on.
    func endGrace() {
        state.update { $0.graceOver = true }
    }

    /// Whether the stop's grace period is over.
    var isGraceOver: Bool { state.read { $0.graceOver } }

    /// Every outcome waiting, once there is at least one; or none, once a stop was requested
    /// (if `wakeOnStop`), jobs may have become claimable (if `wakeOnWork`; the notice is
    /// taken), or the stop's grace period is over.
    ///
    /// - Throws: The error given to ``fail(_:)``; `CancellationError` if the task is cancelled.
    func next(wakeOnStop: Bool = false, wakeOnWork: Bool = false) async throws -> [AttemptOutcome] {
        let taken: Result<[AttemptOutcome], any Error>? = await state.wait { state in
            if let failure = state.failure { return .failure(failure) }
            guard !state.outcomes.isEmpty else {
                if wakeOnWork && state.workNotified {
                    state.workNotified = false
                    return .success([])
                }
                return (wakeOnStop && state.stopRequested) || state.graceOver ? .success([]) : nil
            }
            defer { state.outcomes.removeAll(keepingCapacity: true) }
            return .success(state.outcomes)
        }
        guard let taken else { throw CancellationError() }
        return try taken.get()
    }

    /// Every outcome waiting now, without waiting.
    func takeAll() -> [AttemptOutcome] {
        state.update { state in
            defer { state.outcomes.removeAll() }
            return state.outcomes
        }
    }
}
