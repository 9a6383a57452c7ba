/// A state machine whose callers may have to suspend until it admits them: the shared shape
/// of ``AsyncSemaphore``, ``ConcurrencyLimiter``, ``AsyncEvent`` and ``AsyncGate`` (whose
/// callers are all alike: `Request == Void`), and of the HTTP coordinator's admission (whose
/// callers carry their host and priority).
package protocol AdmissionStateMachine: SendableMetatype {
    typealias Continuation = CheckedContinuation<Void, any Error>
    /// What a caller asks to be admitted with.
    associatedtype Request = Void

    /// Admits the caller now, refuses it because its task is cancelled, or reserves an id
    /// under which it will wait.
    mutating func admitOrReserve(_ request: Request, isCancelled: Bool) -> AdmissionFastPath
    /// Called under the lock from inside the continuation closure: admit now (the state may
    /// have changed since the fast path), refuse a cancelled caller, or queue it.
    mutating func suspend(
        id: UInt64, request: Request, continuation: Continuation, isCancelled: Bool
    ) -> AdmissionSuspendAction
    /// The waiter with `id` was cancelled: remove it if it is still queued.
    mutating func cancel(id: UInt64) -> Continuation?
}

package enum AdmissionFastPath: Equatable, Sendable {
    case admitted
    case cancelled
    case mustWait(id: UInt64)
}

package enum AdmissionSuspendAction: Sendable {
    case resumeAdmitted
    case resumeCancelled
    case suspended
}

extension Locked where State: AdmissionStateMachine & Sendable, State.Request == Void {
    /// Suspends until the state machine admits the caller; see ``suspendUntilAdmitted(_:)``.
    nonisolated(nonsending) func suspendUntilAdmitted() async throws {
        try await suspendUntilAdmitted(())
    }
}

extension Locked where State: AdmissionStateMachine & Sendable {
    /// Suspends until the state machine admits the caller with `request`.
    ///
    /// Cancellation: a task that is already cancelled (when the machine cannot admit it at
    /// once), or is cancelled while it waits, leaves the queue and throws `CancellationError`.
    /// A waiter admitted before its cancellation was seen returns normally, so whatever
    /// admission hands out (a permit) is never lost or counted twice.
    nonisolated(nonsending) package func suspendUntilAdmitted(_ request: State.Request) async throws {
        let id: UInt64
        switch withLock({ $0.admitOrReserve(request, isCancelled: Task.isCancelled) }) {
        case .admitted: return
        case .cancelled: throw CancellationError()
        case .mustWait(let reserved): id = reserved
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: State.Continuation) in
                // `Task.isCancelled` is read under the lock: the cancellation handler sets the
                // flag before it takes the lock, so either it finds this waiter queued or this
                // section sees the flag. No waiter can be left behind.
                let action = withLock {
                    $0.suspend(id: id, request: request, continuation: continuation, isCancelled: Task.isCancelled)
                }
                switch action {
                case .resumeAdmitted: continuation.resume()
                case .resumeCancelled: continuation.resume(throwing: CancellationError())
                case .suspended: break
                }
            }
        } onCancel: {
            withLock { $0.cancel(id: id) }?.resume(throwing: CancellationError())
        }
    }
}
