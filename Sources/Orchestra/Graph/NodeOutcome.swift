/// How one node of a run ended, with its attempts and when it ran.
public struct NodeOutcome<Value: Sendable>: Sendable, CustomStringConvertible {
    /// The terminal state of a node.
    public enum State: Sendable, CustomStringConvertible {
        /// The body returned a value.
        case succeeded(Value)
        /// The last attempt threw `error`.
        case failed(any Error)
        /// The last attempt ran out of time.
        case timedOut(TimeoutError)
        /// The node never ran because `cause` (a node id) failed, timed out, was cancelled or
        /// was skipped itself.
        case skipped(cause: String)
        /// The node or the whole run was cancelled before the node finished.
        case cancelled

        public var description: String {
            switch self {
            case .succeeded: "succeeded"
            case .failed(let error): "failed: \(error)"
            case .timedOut(let error): "\(error)"
            case .skipped(let cause): "skipped because \"\(cause)\" did not succeed"
            case .cancelled: "cancelled"
            }
        }
    }

    /// How the node ended.
    public var state: State
    /// The number of attempts made (0 if it never started).
    public var attempts: Int
    /// When the first attempt started, from the run's start; `nil` if it never started.
    public var started: Duration?
    /// When the node ended, from the run's start.
    public var ended: Duration?

    public init(state: State, attempts: Int, started: Duration?, ended: Duration?) {
        self.state = state
        self.attempts = attempts
        self.started = started
        self.ended = ended
    }

    /// The value, if the node succeeded.
    public var value: Value? {
        if case .succeeded(let value) = state { return value }
        return nil
    }

    /// The error, if the node failed or timed out.
    public var error: (any Error)? {
        switch state {
        case .failed(let error): error
        case .timedOut(let error): error
        case .succeeded, .skipped, .cancelled: nil
        }
    }

    public var succeeded: Bool { value != nil }

    public var description: String { state.description }

    func map<Other: Sendable>(_ transform: (Value) -> Other) -> NodeOutcome<Other> {
        let mapped: NodeOutcome<Other>.State = switch state {
        case .succeeded(let value): .succeeded(transform(value))
        case .failed(let error): .failed(error)
        case .timedOut(let error): .timedOut(error)
        case .skipped(let cause): .skipped(cause: cause)
        case .cancelled: .cancelled
        }
        return NodeOutcome<Other>(state: mapped, attempts: attempts, started: started, ended: ended)
    }
}
