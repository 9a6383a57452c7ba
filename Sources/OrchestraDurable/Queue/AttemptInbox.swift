/// Where a queue's running attempts leave their outcomes for the worker loop, which settles
/// every outcome waiting in one store transaction; and where a failure of the leases' renewal
/// stops the loop.
final class AttemptInbox: Sendable {
    private struct State: Sendable {
        var outcomes: [AttemptOutcome] = []
        var failure: (any Error)?
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

    /// Every outcome waiting, once there is at least one.
    ///
    /// - Throws: The error given to ``fail(_:)``; `CancellationError` if the task is cancelled.
    func next() async throws -> [AttemptOutcome] {
        let taken: Result<[AttemptOutcome], any Error>? = await state.wait { state in
            if let failure = state.failure { return .failure(failure) }
            guard !state.outcomes.isEmpty else { return nil }
            defer { state.outcomes.removeAll(keepingCapacity: true) }
            return .success(state.outcomes)
        }
        guard let taken else { throw CancellationError() }
        return try taken.get()
    }
}
