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
    /// Every node's id (shared with the run, not copied) and this node's dependencies as
    /// indices into it. A node has few dependencies, so a linear search beats building a
    /// dictionary for every node that starts.
    let ids: [String]
    let dependencies: [Int32]
    /// Where the dependencies' outcomes are read, when the node asks for one: they ended before
    /// the node started and never change, and a node that reads none (or reads later) costs
    /// the run nothing.
    let outcomes: any NodeOutcomeSource

    subscript(id: String) -> NodeOutcome<any Sendable>? {
        dependencies.first { ids[Int($0)] == id }.map { outcomes.outcome(of: Int($0)).outcome }
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

/// Reads the outcome of a node that has ended (a run's record of it).
protocol NodeOutcomeSource: Sendable {
    func outcome(of node: Int) -> OutcomeRecord
}
