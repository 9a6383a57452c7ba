/// A typed handle to a node of a ``TaskGraph``: pass it to `add(_:after:…)` to depend on the
/// node, and to a ``GraphResult`` to read its outcome.
public struct Node<Value: Sendable>: Hashable, Sendable, CustomStringConvertible {
    /// The node's id, unique in its graph.
    public let id: String

    /// The node with `id`.
    public init(id: String) {
        self.id = id
    }

    /// `Node("id")`.
    public var description: String { "Node(\"\(id)\")" }
}

/// How one node is scheduled and run. Every field has a default.
public struct NodeOptions: Sendable {
    /// Expected duration in any unit, used to find the longest remaining path; 1 by default.
    public var cost: Double
    /// Ready nodes with a higher priority start first; 0 by default.
    public var priority: Int
    /// The time limit for each attempt; none by default.
    public var timeout: Duration?
    /// Retries after a failed attempt; one attempt by default.
    public var retry: RetryPolicy
    /// Named resources the node uses while it runs, each limited by the run's `resourceLimits`.
    public var resources: [String]

    /// Options; each parameter is described by the property of the same name.
    public init(
        cost: Double = 1, priority: Int = 0, timeout: Duration? = nil, retry: RetryPolicy = .never,
        resources: [String] = []
    ) {
        self.cost = cost
        self.priority = priority
        self.timeout = timeout
        self.retry = retry
        self.resources = resources
    }
}

/// The values a node's dependencies produced, for nodes added by id
/// (``TaskGraph/add(id:dependsOn:options:operation:)``).
public struct NodeInputs: Sendable {
    /// The node whose inputs these are, and the run that knows its dependencies and their
    /// outcomes. They are read when the node asks for one (they ended before the node started
    /// and never change), so a node that reads none costs the run nothing.
    let node: Int
    let run: any NodeInputSource

    subscript(id: String) -> NodeOutcome<any Sendable>? {
        run.outcome(ofDependency: id, of: node)
    }

    /// The value of dependency `id`, as `type`.
    ///
    /// - Throws: ``TaskGraphError`` if `id` is not a dependency of this node, did not succeed,
    ///   or produced a value of another type.
    public func value<Value>(of id: String, as type: Value.Type = Value.self) throws(TaskGraphError) -> Value {
        guard let outcome = self[id] else {
            throw TaskGraphError(
                code: .unknownDependency, message: "\"\(id)\" is not a dependency of this node", path: [id])
        }
        guard case .succeeded(let value) = outcome.state else {
            throw TaskGraphError(
                code: .dependencyFailed, message: "dependency \"\(id)\" did not succeed: \(outcome.state)", path: [id])
        }
        guard let typed = value as? Value else {
            throw TaskGraphError(
                code: .typeMismatch,
                message: "dependency \"\(id)\" produced a \(Swift.type(of: value)), not a \(Value.self)",
                path: [id]
            )
        }
        return typed
    }

    /// The outcome of dependency `id`, whatever it ended with (for `afterOutcomes` nodes).
    public func outcome(of id: String) -> NodeOutcome<any Sendable>? {
        self[id]
    }
}

/// Where a node's inputs are read: a run's record of the node's dependencies.
protocol NodeInputSource: Sendable {
    /// The outcome of the dependency of `node` named `id`; `nil` if `node` has no such
    /// dependency.
    func outcome(ofDependency id: String, of node: Int) -> NodeOutcome<any Sendable>?
}
