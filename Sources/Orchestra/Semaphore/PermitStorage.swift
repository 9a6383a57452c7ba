extension PermitStateMachine: AdmissionStateMachine {}

extension Locked where State == PermitStateMachine {
    /// Takes a permit, suspending in FIFO order until one is free.
    ///
    /// Cancellation: a task that is already cancelled, or is cancelled while it waits, throws
    /// `CancellationError` and holds no permit.
    nonisolated(nonsending) func acquirePermit() async throws {
        try await suspendUntilAdmitted()
    }

    /// Returns a permit, handing it to the oldest waiter if there is one.
    func releasePermit() {
        withLock { $0.release() }?.resume()
    }
}
