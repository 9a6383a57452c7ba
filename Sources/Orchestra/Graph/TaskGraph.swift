/// Async tasks with typed dependencies: a node starts only after the nodes it depends on have
/// *returned*, receives their results, and the whole graph runs with limits, critical-path
/// scheduling and failure policies.
///
/// ```swift
/// let graph = TaskGraph()
/// let token   = graph.add("login") { try await api.login() }
/// let profile = graph.add("profile", after: token) { token in try await api.profile(token) }
/// let feed    = graph.add("feed", after: token) { token in try await api.feed(token) }
/// let page    = graph.add("page", after: profile, feed) { profile, feed in Page(profile, feed) }
/// let result  = try await graph.run(limit: 4)
/// show(try result.value(of: page))
/// ```
///
/// Graphs built with typed handles cannot contain a cycle: a node can only depend on nodes that
/// already exist. Graphs built from data use ids (``add(id:dependsOn:options:operation:)``,
/// ``addDependency(_:on:)``); ``validate()`` and every run reject cycles, unknown and duplicate
/// ids and self-dependencies, naming the nodes.
///
/// A graph is a description: it can be run many times, and each run starts every node afresh.
public final class TaskGraph: Sendable {
    typealias Body = @Sendable (NodeInputs) async throws -> any Sendable

    /// One node on its way into a graph.
    struct Definition: Sendable {
        var id: String
        var dependencies: [String]
        var options: NodeOptions
        var runsAfterAnyOutcome: Bool
        var body: Body

        var spec: NodeSpec {
            NodeSpec(
                id: id, dependencies: dependencies, cost: options.cost, priority: options.priority,
                resources: options.resources, runsAfterAnyOutcome: runsAfterAnyOutcome
            )
        }

        var extras: NodeExtras? {
            NodeExtras.make(timeout: options.timeout, retry: options.retry, resources: options.resources)
        }
    }

    /// The nodes, their closures, and the last blueprint validated (reused by the next run
    /// while the graph has not changed).
    struct Storage: Sendable {
        var nodes = GraphNodes()
        var bodies: [Body] = []
        var version = 0
        var validated: (version: Int, resourceLimits: [String: Int], blueprint: GraphBlueprint)?
    }

    private let storage = Locked(Storage())

    /// An empty graph.
    public init() {}

    /// The ids of the nodes, in insertion order.
    public var nodeIDs: [String] {
        storage.withLock { $0.nodes.ids }
    }

    /// Adds a node that runs after `dependencies` succeeded and receives their values.
    ///
    /// - Parameters:
    ///   - id: The node's id, unique in the graph (a duplicate is reported by ``validate()``
    ///     and by every run).
    ///   - dependencies: Nodes whose values `operation` receives, in the same order.
    ///   - cost: Expected duration in any unit (default 1); longer remaining paths start first.
    ///   - priority: Ready nodes with a higher priority start first (default 0).
    ///   - timeout: The time limit of each attempt; the node then ends timed out.
    ///   - retry: What to retry; a node waiting out a backoff gives back its slot.
    ///   - resources: Named resources the node uses, limited by the run's `resourceLimits`.
    ///   - operation: The work. Cancellation: it is cancelled when the run is cancelled or
    ///     fails fast, and when its attempt times out.
    /// - Returns: A typed handle to depend on the node and to read its outcome.
    @discardableResult
    public func add<each Dependency: Sendable, Value: Sendable>(
        _ id: String,
        after dependencies: repeat Node<each Dependency>,
        cost: Double = 1,
        priority: Int = 0,
        timeout: Duration? = nil,
        retry: RetryPolicy = .never,
        resources: [String] = [],
        operation: @escaping @Sendable (repeat each Dependency) async throws -> Value
    ) -> Node<Value> {
        append(
            Self.definition(
                id, after: repeat each dependencies,
                options: NodeOptions(
                    cost: cost, priority: priority, timeout: timeout, retry: retry, resources: resources),
                operation: operation
            ))
    }

    /// Adds a node that runs after `dependencies` ended, however they ended, and receives each
    /// one's ``NodeOutcome``: for clean-up and "report what happened" steps. It runs even when
    /// a dependency failed, was skipped or cancelled (but not after the whole run was cancelled).
    @discardableResult
    public func add<First: Sendable, each Dependency: Sendable, Value: Sendable>(
        _ id: String,
        afterOutcomesOf first: Node<First>,
        _ dependencies: repeat Node<each Dependency>,
        cost: Double = 1,
        priority: Int = 0,
        timeout: Duration? = nil,
        retry: RetryPolicy = .never,
        resources: [String] = [],
        operation: @escaping @Sendable (NodeOutcome<First>, repeat NodeOutcome<each Dependency>) async throws -> Value
    ) -> Node<Value> {
        var ids = [first.id]
        for dependency in repeat each dependencies { ids.append(dependency.id) }
        let handles = (repeat each dependencies)
        return append(
            Definition(
                id: id,
                dependencies: ids,
                options: NodeOptions(
                    cost: cost, priority: priority, timeout: timeout, retry: retry, resources: resources),
                runsAfterAnyOutcome: true,
                body: { inputs in
                    try await operation(inputs.typedOutcome(of: first), repeat inputs.typedOutcome(of: each handles))
                }
            ))
    }

    /// Adds a node whose work is a completion-handler API (a `complete(true)` or
    /// `finishOperation()` call when it is done), with ``withCallback(isolation:diagnostics:onCancel:fileID:line:_:)``'s
    /// guarantees: a second call is ignored and reported, a dropped completion ends the node with
    /// ``CallbackError/abandoned``, and cancellation ends it at once.
    ///
    /// ```swift
    /// graph.addCallback("upload", after: file) { completion, file in
    ///     legacyUpload(file) { error in error.map(completion.resume(throwing:)) ?? completion.resume() }
    /// }
    /// ```
    @discardableResult
    public func addCallback<each Dependency: Sendable, Value: Sendable>(
        _ id: String,
        after dependencies: repeat Node<each Dependency>,
        cost: Double = 1,
        priority: Int = 0,
        timeout: Duration? = nil,
        retry: RetryPolicy = .never,
        resources: [String] = [],
        fileID: String = #fileID,
        line: Int = #line,
        operation: @escaping @Sendable (Completion<Value>, repeat each Dependency) -> Void
    ) -> Node<Value> {
        var ids: [String] = []
        for dependency in repeat each dependencies { ids.append(dependency.id) }
        let handles = (repeat each dependencies)
        return append(
            Definition(
                id: id,
                dependencies: ids,
                options: NodeOptions(
                    cost: cost, priority: priority, timeout: timeout, retry: retry, resources: resources),
                runsAfterAnyOutcome: false,
                body: { inputs in
                    try await withCallback(fileID: fileID, line: line) { (completion: Completion<Value>) in
                        operation(completion, repeat inputs.typedValue(of: each handles))
                    }
                }
            ))
    }

    /// Adds a node by id, for graphs built from data (API managers that depend on each other). Dependencies may
    /// name nodes added later; ``validate()`` and every run check them.
    ///
    /// - Parameters:
    ///   - id: The node's id, unique in the graph.
    ///   - dependencies: The ids of the nodes that must succeed before this one starts.
    ///   - options: Cost, priority, timeout, retry policy and resources.
    ///   - operation: The work; reads its dependencies' values from ``NodeInputs``.
    public func add<Value: Sendable>(
        id: String,
        dependsOn dependencies: [String] = [],
        options: NodeOptions = NodeOptions(),
        operation: @escaping @Sendable (NodeInputs) async throws -> Value
    ) {
        let _: Node<Value> = append(
            Definition(
                id: id, dependencies: dependencies, options: options, runsAfterAnyOutcome: false, body: operation))
    }

    /// Makes node `id` depend on node `dependency` (both by id). Checked by ``validate()`` and
    /// every run: a cycle, an unknown id or a self-dependency is reported there.
    ///
    /// - Throws: ``TaskGraphError`` with code ``TaskGraphError/Code/unknownNode`` if no node has
    ///   the id `id`.
    public func addDependency(_ id: String, on dependency: String) throws(TaskGraphError) {
        try update(id) { nodes, node in nodes.addDependency(node, on: dependency) }
    }

    /// Removes the dependency of node `id` on `dependency`, if there is one.
    ///
    /// - Throws: ``TaskGraphError`` with code ``TaskGraphError/Code/unknownNode`` if no node has
    ///   the id `id`.
    public func removeDependency(_ id: String, on dependency: String) throws(TaskGraphError) {
        try update(id) { nodes, node in nodes.removeDependency(node, on: dependency) }
    }

    /// Checks the graph without running it: cycles (with their path), unknown and duplicate ids,
    /// self-dependencies, and costs.
    ///
    /// - Throws: ``TaskGraphError`` naming the nodes involved.
    public func validate() throws(TaskGraphError) {
        _ = try blueprint(resourceLimits: nil)
    }

    /// Each node's longest remaining path: its cost plus the costliest chain of its dependents,
    /// in the order the nodes were added. Ready nodes start in decreasing order of it (within a
    /// priority); a scheduler outside this module (durable runs) orders its jobs the same way.
    ///
    /// - Throws: ``TaskGraphError`` as ``validate()`` does.
    package func criticalPathLengths() throws(TaskGraphError) -> [Double] {
        try blueprint(resourceLimits: nil).1.bottomLevels
    }

    /// Adds `ids.count` nodes at once whose dependencies are positions in `ids`, for bridges
    /// from another dependency system (`TaskGraph(operations:)`): no dependency is looked up by
    /// name. Node `i` runs `body(i)`; its dependencies are
    /// `dependencyList[dependencyStart[i] ..< dependencyStart[i + 1]]` (flat, so that a bridge
    /// of 10,000 operations allocates two arrays, not one per operation). Duplicate ids, cycles
    /// and self-dependencies are reported by validation as for any node.
    ///
    /// - Precondition: `dependencyStart` has `ids.count + 1` nondecreasing offsets into
    ///   `dependencyList`, starting at 0, and every position in `dependencyList` is in
    ///   `ids.indices`.
    package func addNodes(
        ids: [String],
        dependencyStart: [Int],
        dependencyList: [Int],
        body: @escaping @Sendable (Int) async throws -> any Sendable
    ) {
        precondition(
            dependencyStart.count == ids.count + 1 && dependencyStart.first == 0
                && dependencyStart.last == dependencyList.count,
            "TaskGraph.addNodes: dependencyStart must hold ids.count + 1 offsets from 0 to dependencyList.count")
        storage.withLock { storage in
            storage.validated = nil
            let base = storage.nodes.ids.count
            storage.nodes.reserveCapacity(base + ids.count)
            storage.bodies.reserveCapacity(base + ids.count)
            // One closure for every node: a node's inputs carry its index, so no closure per
            // node is allocated (and none is touched, cold, when the node starts).
            let shared: Body = { inputs in try await body(inputs.node - base) }
            var entries: [Int32] = []
            for (position, id) in ids.enumerated() {
                entries.removeAll(keepingCapacity: true)
                for dependency in dependencyList[dependencyStart[position]..<dependencyStart[position + 1]] {
                    precondition(
                        ids.indices.contains(dependency), "TaskGraph.addNodes: dependency \(dependency) out of range")
                    let entry = Int32(base + dependency)
                    if !entries.contains(entry) { entries.append(entry) }
                }
                storage.nodes.append(
                    id: id, resolvedDependencies: entries, cost: 1, priority: 0, runsAfterAnyOutcome: false, extras: nil
                )
                storage.bodies.append(shared)
            }
            storage.version += 1
        }
    }

    // MARK: - Internals

    /// A typed node's definition, shared by ``add(_:after:cost:priority:timeout:retry:resources:operation:)``
    /// and ``GraphRun/add(_:after:cost:priority:timeout:retry:resources:operation:)``.
    static func definition<each Dependency: Sendable, Value: Sendable>(
        _ id: String,
        after dependencies: repeat Node<each Dependency>,
        options: NodeOptions,
        operation: @escaping @Sendable (repeat each Dependency) async throws -> Value
    ) -> Definition {
        var ids: [String] = []
        for dependency in repeat each dependencies { ids.append(dependency.id) }
        let handles = (repeat each dependencies)
        return Definition(
            id: id,
            dependencies: ids,
            options: options,
            runsAfterAnyOutcome: false,
            body: { inputs in try await operation(repeat inputs.typedValue(of: each handles)) }
        )
    }

    private func append<Value: Sendable>(_ definition: Definition) -> Node<Value> {
        let extras = definition.extras
        storage.withLock { storage in
            // Drop the cached blueprint first: it shares the arrays, which would then be copied.
            storage.validated = nil
            storage.nodes.append(
                id: definition.id, dependencies: definition.dependencies, cost: definition.options.cost,
                priority: definition.options.priority, runsAfterAnyOutcome: definition.runsAfterAnyOutcome,
                extras: extras
            )
            storage.bodies.append(definition.body)
            storage.version += 1
        }
        return Node(id: definition.id)
    }

    private func update(_ id: String, _ change: (inout GraphNodes, Int) -> Void) throws(TaskGraphError) {
        let found = storage.withLock { storage -> Bool in
            guard let node = storage.nodes.index(of: id) else { return false }
            storage.validated = nil
            change(&storage.nodes, node)
            storage.version += 1
            return true
        }
        if !found {
            throw TaskGraphError(code: .unknownNode, message: "no node has the id \"\(id)\"", path: [id])
        }
    }

    /// The nodes as they are now, unvalidated.
    var nodes: GraphNodes {
        storage.withLock { $0.nodes }
    }

    /// The closures and the validated blueprint of the graph as it is now. With
    /// `resourceLimits` nil, resources are only checked for being named (``validate()`` has no
    /// limits to check them against). The blueprint is kept and reused while the graph does not
    /// change, so running a graph again does not validate it again.
    func blueprint(resourceLimits: [String: Int]?) throws(TaskGraphError) -> ([Body], GraphBlueprint) {
        let (nodes, bodies, version, cached) = storage.withLock { storage in
            (storage.nodes, storage.bodies, storage.version, storage.validated)
        }
        let limits =
            resourceLimits
            ?? Dictionary(
                (0..<nodes.count).flatMap(nodes.resources(of:)).map { ($0, 1) }, uniquingKeysWith: { first, _ in first }
            )
        if let cached, cached.version == version, cached.resourceLimits == limits {
            return (bodies, cached.blueprint)
        }
        let blueprint = try GraphBlueprint(nodes, resourceLimits: limits)
        storage.withLock { storage in
            if storage.version == version { storage.validated = (version, limits, blueprint) }
        }
        return (bodies, blueprint)
    }
}

extension NodeInputs {
    func typedValue<Value>(of node: Node<Value>) -> Value {
        // Typed nodes only run after their typed dependencies succeeded with a Value.
        self[node.id]!.value as! Value
    }

    func typedOutcome<Value>(of node: Node<Value>) -> NodeOutcome<Value> {
        self[node.id]!.map { $0 as! Value }
    }
}
