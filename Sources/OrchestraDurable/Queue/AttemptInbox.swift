import Orchestra

/// Where a queue's running attempts leave their outcomes for the worker loop, which settles
/// every outcome waiting in one store transaction; and where a failure of the leases' renewal
/// stops the loop.
final class AttemptInbox: Sendable {
    private struct State {
        var outcomes: [AttemptOutcome] = []
        var failure: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Locked(State())

    /// Leaves an outcome; wakes the loop if it waits.
    func post(_ outcome: AttemptOutcome) {
        state.withLock { state in
            state.outcomes.append(outcome)
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }

    /// Stops the loop with `error` at its next wait.
    func fail(_ error: any Error) {
        state.withLock { state in
            state.failure = state.failure ?? error
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }

    /// Every outcome waiting, once there is at least one.
    ///
    /// - Throws: The error given to ``fail(_:)``; `CancellationError` if the task is cancelled.
    func next() async throws -> [AttemptOutcome] {
        while true {
            let taken: Result<[AttemptOutcome], any Error>? = state.withLock { state in
                if let failure = state.failure { return .failure(failure) }
                guard !state.outcomes.isEmpty else { return nil }
                defer { state.outcomes.removeAll(keepingCapacity: true) }
                return .success(state.outcomes)
            }
            if let taken { return try taken.get() }
            try Task.checkCancellation()
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state in
                        guard state.outcomes.isEmpty, state.failure == nil, !state.cancelled, !Task.isCancelled
                        else { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                state.withLock { state in
                    state.cancelled = true
                    defer { state.waiter = nil }
                    return state.waiter
                }?.resume()
            }
        }
    }
}
