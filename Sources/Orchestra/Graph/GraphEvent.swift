/// Something that happened to a node during a run, as delivered by ``GraphRun/events``.
public struct GraphEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable {
        /// The node was added while the graph ran.
        case added
        /// An attempt started (1 for the first).
        case started(attempt: Int)
        /// An attempt failed with `error`; the next one starts after `delay`.
        case retrying(attempt: Int, delay: Duration, error: any Error)
        /// The node returned its value.
        case succeeded
        /// The node threw `error` on its last attempt.
        case failed(any Error)
        /// The node's last attempt ran past its timeout.
        case timedOut(TimeoutError)
        /// The node will never run because `cause` did not succeed.
        case skipped(cause: String)
        /// The node was cancelled (the run, its own cancellation, or fail-fast).
        case cancelled
    }

    /// The node's id.
    public var node: String
    /// What happened.
    public var kind: Kind
    /// When it happened, from the run's start.
    public var time: Duration

    /// `0.3 seconds profile: succeeded`.
    public var description: String {
        let what: String =
            switch kind {
            case .added: "added"
            case .started(let attempt): attempt == 1 ? "started" : "started attempt \(attempt)"
            case .retrying(let attempt, let delay, let error):
                "attempt \(attempt) failed (\(error)); retrying in \(delay)"
            case .succeeded: "succeeded"
            case .failed(let error): "failed: \(error)"
            case .timedOut(let error): "\(error)"
            case .skipped(let cause): "skipped because \"\(cause)\" did not succeed"
            case .cancelled: "cancelled"
            }
        return "\(time) \(node): \(what)"
    }
}

/// How far a run has come.
public struct GraphProgress: Sendable, Equatable, CustomStringConvertible {
    /// Nodes that ended, however they ended.
    public var completed: Int
    /// Nodes in the graph, including those added while it runs.
    public var total: Int
    /// Nodes running now.
    public var running: Int

    /// Progress with these counts.
    public init(completed: Int, total: Int, running: Int) {
        self.completed = completed
        self.total = total
        self.running = running
    }

    /// `completed / total`, 1 for an empty graph.
    public var fraction: Double {
        total == 0 ? 1 : Double(completed) / Double(total)
    }

    /// `completed/total`.
    public var description: String { "\(completed)/\(total)" }
}
