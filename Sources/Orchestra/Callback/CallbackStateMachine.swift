/// The pure state of one ``withCallback(isolation:diagnostics:onCancel:fileID:line:_:)`` call.
///
/// ```
/// starting ──register──▶ waiting ──complete / abandon / cancel──▶ finished | cancelled
///     └───────cancel──────────────────────────────────────────────▶ cancelled
/// ```
struct CallbackStateMachine<Value: Sendable> {
    typealias Continuation = CheckedContinuation<Value, any Error>

    private enum Phase {
        case starting
        case waiting(Continuation)
        /// `askedToStop`: cancellation handlers were run, so a completion that still arrives
        /// is the legacy API acknowledging the cancellation.
        case cancelled(askedToStop: Bool)
        case finished
    }

    private var phase = Phase.starting
    private var cancelHandlers: [@Sendable () -> Void] = []

    enum RegisterAction {
        case start
        case resumeCancelled
    }

    /// The continuation is ready; start the legacy work unless the task is already cancelled.
    mutating func register(_ continuation: Continuation, isCancelled: Bool) -> RegisterAction {
        guard case .starting = phase, !isCancelled else {
            phase = .cancelled(askedToStop: false)
            return .resumeCancelled
        }
        phase = .waiting(continuation)
        return .start
    }

    enum CompleteAction {
        case resume(Continuation)
        case reportDouble
        /// `expected`: the legacy work had been asked to stop (see ``Phase``).
        case reportLate(expected: Bool)
    }

    /// The completion was called.
    mutating func complete() -> CompleteAction {
        switch phase {
        case .waiting(let continuation):
            phase = .finished
            cancelHandlers = []
            return .resume(continuation)
        case .finished, .starting:
            return .reportDouble
        case .cancelled(let askedToStop):
            return .reportLate(expected: askedToStop)
        }
    }

    /// The last reference to the completion went away. Returns the continuation to fail with
    /// ``CallbackError/abandoned`` if the call was still waiting.
    mutating func abandon() -> Continuation? {
        guard case .waiting(let continuation) = phase else { return nil }
        phase = .finished
        cancelHandlers = []
        return continuation
    }

    /// The awaiting task was cancelled. Returns the continuation to fail and the handlers that
    /// cancel the legacy work.
    mutating func cancel() -> (Continuation?, [@Sendable () -> Void]) {
        switch phase {
        case .starting:
            phase = .cancelled(askedToStop: false)
            return (nil, [])
        case .waiting(let continuation):
            phase = .cancelled(askedToStop: !cancelHandlers.isEmpty)
            defer { cancelHandlers = [] }
            return (continuation, cancelHandlers)
        case .cancelled, .finished:
            return (nil, [])
        }
    }

    /// Adds a handler that cancels the legacy work. Returns `true` if the call is already
    /// cancelled, in which case the caller runs the handler at once.
    mutating func addCancelHandler(_ handler: @escaping @Sendable () -> Void) -> Bool {
        switch phase {
        case .starting, .waiting:
            cancelHandlers.append(handler)
            return false
        case .cancelled:
            phase = .cancelled(askedToStop: true)
            return true
        case .finished:
            return false
        }
    }
}
