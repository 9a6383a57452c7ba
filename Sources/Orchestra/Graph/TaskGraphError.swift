/// A task graph that cannot run as described: a cycle, an unknown or duplicate node, a bad
/// limit or cost. Every message names the nodes and values involved.
///
/// ```swift
/// catch let error as TaskGraphError where error.code == .cycle {
///     print(error.path)            // ["a", "b", "c", "a"]
/// }
/// ```
public struct TaskGraphError: Error, Sendable, CustomStringConvertible {
    /// The kind of problem, comparable with `==`; more codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as messages show it.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// The dependencies form a cycle; ``TaskGraphError/path`` holds it.
        public static let cycle = Code("cycle")
        /// A node depends on an id that is not in the graph.
        public static let unknownDependency = Code("unknownDependency")
        /// Two nodes share an id.
        public static let duplicateNode = Code("duplicateNode")
        /// A node depends on itself.
        public static let selfDependency = Code("selfDependency")
        /// A cost that is negative, infinite or not a number.
        public static let invalidCost = Code("invalidCost")
        /// A node uses a resource that has no limit and no rate.
        public static let unknownResource = Code("unknownResource")
        /// A concurrency or resource limit below 1.
        public static let invalidLimit = Code("invalidLimit")
        /// A node's value was asked for, but the node did not succeed.
        public static let dependencyFailed = Code("dependencyFailed")
        /// A dependency's value was asked for as a type it does not have.
        public static let typeMismatch = Code("typeMismatch")
        /// A node was asked for that is not part of the graph or the run.
        public static let unknownNode = Code("unknownNode")
        /// A node failed and the run's policy is ``FailurePolicy/failFast``;
        /// ``TaskGraphError/underlying`` holds the node's error.
        public static let nodeFailed = Code("nodeFailed")
    }

    /// What is wrong.
    public var code: Code
    /// A sentence naming the nodes and values involved.
    public var message: String
    /// The ids of the nodes involved; for a cycle, the cycle itself, first id repeated at the
    /// end (`a → b → c → a`).
    public var path: [String]
    /// The error of the node involved, when there is one (a failed node under fail-fast).
    public var underlying: (any Error)?

    /// An error with its `code`, a `message`, the nodes of a cycle (`path`) and the error that caused it, if any.
    public init(code: Code, message: String, path: [String] = [], underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.underlying = underlying
    }

    /// `TaskGraphError.code: message`.
    public var description: String { "TaskGraphError.\(code): \(message)" }
}
