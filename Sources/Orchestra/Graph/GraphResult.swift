/// The outcome of every node of a finished run.
///
/// ```swift
/// let result = try await graph.run(limit: 4)
/// let page = try result.value(of: pageNode)       // or: result[pageNode].state
/// ```
public struct GraphResult: Sendable {
    /// The graph's ids and index, shared with it: a result copies nothing but the outcomes.
    private let nodes: GraphNodes
    private let outcomes: OutcomeTable
    /// From the run's start to its last node's end, on the run's clock.
    public let duration: Duration

    /// The node ids in insertion order.
    public var nodeIDs: [String] { nodes.ids }

    init(nodes: GraphNodes, outcomes: OutcomeTable, duration: Duration) {
        self.nodes = nodes
        self.outcomes = outcomes
        self.duration = duration
    }

    /// The outcome of `node`. Reading a node of another graph is a programmer error and traps
    /// with a message naming it.
    public subscript<Value>(node: Node<Value>) -> NodeOutcome<Value> {
        guard let outcome = outcome(id: node.id) else {
            fatalError("GraphResult: \(node) is not part of this run (nodes: \(nodeIDs.joined(separator: ", ")))")
        }
        return outcome.map { $0 as! Value }
    }

    /// The outcome of the node with `id`, or `nil` if no node has it.
    public func outcome(id: String) -> NodeOutcome<any Sendable>? {
        nodes.index(of: id).map { outcomes[$0].outcome }
    }

    /// The value of `node`.
    ///
    /// - Throws: ``TaskGraphError`` (code ``TaskGraphError/Code/dependencyFailed``) naming the
    ///   node and why it has no value: its error, the node that caused its skip, or its
    ///   cancellation; or code ``TaskGraphError/Code/unknownNode``.
    public func value<Value>(of node: Node<Value>) throws(TaskGraphError) -> Value {
        guard let outcome = outcome(id: node.id) else {
            throw TaskGraphError(
                code: .unknownNode, message: "node \"\(node.id)\" is not part of this run", path: [node.id])
        }
        guard case .succeeded(let value) = outcome.state else {
            throw TaskGraphError(
                code: .dependencyFailed,
                message: "node \"\(node.id)\" has no value: it \(outcome.state)",
                path: [node.id],
                underlying: outcome.error
            )
        }
        return value as! Value
    }

    /// Whether every node succeeded.
    public var allSucceeded: Bool {
        outcomes.allSucceeded
    }

    /// The ids of the nodes that did not succeed, with how they ended.
    public var problems: [(id: String, state: NodeOutcome<any Sendable>.State)] {
        nodeIDs.indices.filter { !outcomes[$0].succeeded }.map { (nodeIDs[$0], outcomes[$0].state) }
    }
}
