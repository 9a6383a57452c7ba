/// A validated graph in index form: its nodes with every dependency resolved, the dependents of
/// each node, and each node's critical-path length (its cost plus the longest chain of costs
/// after it).
///
/// Building one is the validation: duplicates, unknown or self dependencies, cycles, bad costs
/// and resources without limits are rejected with a ``TaskGraphError`` naming them.
/// Complexity: O(nodes + edges), with no allocation per node: the nodes' arrays are shared with
/// the graph, and the dependents are two flat arrays.
struct GraphBlueprint: Sendable {
    private(set) var nodes: GraphNodes
    /// The dependents of node `n` are `dependentList[dependentStart[n] ..< dependentStart[n + 1]]`,
    /// then `addedDependents[n]` (edges to nodes added while the graph runs).
    private var dependentStart: [Int32]
    private var dependentList: [Int32]
    private var addedDependents: [Int32: [Int32]] = [:]
    /// For each node, the indices of the resources it uses; empty if no node uses any.
    private var resourceUse: [[Int32]]
    private(set) var resourceNames: [String]
    private(set) var resourceLimits: [Int]
    /// Cost of the node plus the longest cost path from it to the end of the graph.
    private(set) var bottomLevels: [Double]

    var count: Int { nodes.count }
    var ids: [String] { nodes.ids }
    var costs: [Double] { nodes.costs }

    func id(of node: Int) -> String { nodes.ids[node] }
    func cost(of node: Int) -> Double { nodes.costs[node] }
    func priority(of node: Int) -> Int { nodes.priority(of: node) }
    func runsAfterAnyOutcome(_ node: Int) -> Bool { nodes.runsAfterAnyOutcome[node] }
    func dependencies(of node: Int) -> ArraySlice<Int32> { nodes.dependencies(of: node) }
    func indexIfPresent(of id: String) -> Int? { nodes.index(of: id) }

    func resources(of node: Int) -> [Int32] {
        resourceUse.isEmpty ? [] : resourceUse[node]
    }

    /// Hints the processor to fetch where the dependents of `node` are listed, for a node that
    /// just became ready: they are read when it ends.
    func prefetchDependentRange(of node: Int) {
        dependentStart.prefetch(node)
    }

    /// Hints the processor to fetch the list of the dependents of `node`, for a node that just
    /// started.
    func prefetchDependents(of node: Int) {
        dependentList.prefetch(Int(dependentStart[node]))
    }

    /// The dependents `node` had when the blueprint was built.
    func directDependents(of node: Int) -> ArraySlice<Int32> {
        dependentList[Int(dependentStart[node])..<Int(dependentStart[node + 1])]
    }

    /// The dependents added to `node` while the graph runs.
    func addedDependents(of node: Int) -> [Int32]? {
        addedDependents.isEmpty ? nil : addedDependents[Int32(node)]
    }

    init(_ specs: [NodeSpec], resourceLimits limits: [String: Int] = [:]) throws(TaskGraphError) {
        try self.init(GraphNodes(specs), resourceLimits: limits)
    }

    init(_ nodes: GraphNodes, resourceLimits limits: [String: Int]) throws(TaskGraphError) {
        var nodes = nodes
        if let duplicate = nodes.duplicates.first {
            let id = nodes.ids[Int(duplicate)]
            throw TaskGraphError(code: .duplicateNode, message: "two nodes have the id \"\(id)\"", path: [id])
        }
        for node in 0..<nodes.count {
            try Self.checkCost(nodes.costs[node], of: nodes.ids[node])
        }
        let resourceNames = limits.keys.sorted()
        for name in resourceNames where limits[name]! < 1 {
            throw TaskGraphError(
                code: .invalidLimit,
                message: "resource \"\(name)\" has limit \(limits[name]!); a limit must be at least 1")
        }
        try nodes.resolve()
        assert(nodes.dependenciesAreFlat, "GraphBlueprint: resolved dependencies are not flat")

        // Dependents by counting: one pass for the counts, one to fill. Self-dependencies are
        // found on the way. Resolved, the dependencies lie flat, node after node.
        let count = nodes.count
        let dependencyStart = nodes.dependencyStart
        let dependencyList = nodes.dependencyList
        // Both passes read the dependencies in order and touch each one's count anywhere in
        // `start`: the count `lookahead` edges on is prefetched (on a graph larger than the
        // caches, each would be a miss).
        let lookahead = 16
        var start = [Int32](repeating: 0, count: count + 1)
        for node in 0..<count {
            for edge in Int(dependencyStart[node])..<Int(dependencyStart[node + 1]) {
                let dependency = Int(dependencyList[edge])
                guard dependency != node else {
                    let id = nodes.ids[node]
                    throw TaskGraphError(code: .selfDependency, message: "node \"\(id)\" depends on itself", path: [id])
                }
                if edge + lookahead < dependencyList.count { start.prefetch(Int(dependencyList[edge + lookahead])) }
                start[dependency] += 1
            }
        }
        // Each node's count becomes the end of its range; filling from the last node backwards
        // moves it down to the range's start and keeps each range in insertion order.
        for node in 0..<count { start[node + 1] += start[node] }
        var list = [Int32](repeating: 0, count: Int(start[count]))
        for node in (0..<count).reversed() {
            for edge in (Int(dependencyStart[node])..<Int(dependencyStart[node + 1])).reversed() {
                let dependency = Int(dependencyList[edge])
                if edge >= lookahead { start.prefetch(Int(dependencyList[edge - lookahead])) }
                start[dependency] -= 1
                list[Int(start[dependency])] = Int32(node)
            }
        }

        var resourceUse: [[Int32]] = []
        if nodes.usesResources {
            let resourceIndex = Dictionary(uniqueKeysWithValues: resourceNames.enumerated().map { ($1, Int32($0)) })
            resourceUse = Array(repeating: [], count: count)
            for node in 0..<count where !nodes.resources(of: node).isEmpty {
                resourceUse[node] = try Self.resolveResources(
                    nodes.resources(of: node), of: nodes.ids[node], in: resourceIndex)
            }
        }

        self.nodes = nodes
        self.dependentStart = start
        self.dependentList = list
        self.resourceUse = resourceUse
        self.resourceNames = resourceNames
        self.resourceLimits = resourceNames.map { limits[$0]! }
        self.bottomLevels = []
        bottomLevels = try Self.levels(of: nodes, dependentStart: start, dependentList: list)
    }

    /// Each node's bottom level, found from the sinks up (Kahn's algorithm on the reversed
    /// graph: a node is done once all its dependents are). Nodes never done lie on or behind a
    /// cycle, which is thrown as a path.
    private static func levels(
        of nodes: GraphNodes, dependentStart: [Int32], dependentList: [Int32]
    ) throws(TaskGraphError) -> [Double] {
        let count = nodes.count
        // Dependents not yet done; below, the level so far is kept in `levels`.
        var open = [Int32](repeating: 0, count: count)
        var levels = [Double](repeating: 0, count: count)
        var stack: [Int32] = []
        for node in 0..<count {
            open[node] = dependentStart[node + 1] - dependentStart[node]
            if open[node] == 0 { stack.append(Int32(node)) }
        }
        var done = 0
        while let next = stack.popLast() {
            let node = Int(next)
            done += 1
            let level = levels[node] + nodes.costs[node]
            levels[node] = level
            for dependency in nodes.dependencies(of: node) {
                let target = Int(dependency)
                if levels[target] < level { levels[target] = level }
                open[target] -= 1
                if open[target] == 0 {
                    // Taken from the stack soon: fetch where its dependencies are listed.
                    nodes.dependencyStart.prefetch(target)
                    stack.append(dependency)
                }
            }
        }
        guard done < count else { return levels }
        let cycle = findCycle(
            among: Set((0..<count).filter { open[$0] > 0 }), dependentStart: dependentStart,
            dependentList: dependentList
        )
        let names = cycle.map { nodes.ids[$0] }
        throw TaskGraphError(
            code: .cycle,
            message: "the dependencies form a cycle: \(names.joined(separator: " → "))",
            path: names
        )
    }

    /// Adds a node while the graph runs. It may depend only on nodes already in the graph, so
    /// it cannot close a cycle. The critical-path levels of its ancestors grow as needed.
    ///
    /// - Returns: The new node's index.
    /// - Throws: ``TaskGraphError`` for a duplicate id, an unknown or self dependency, a bad
    ///   cost or a resource without a limit.
    mutating func append(_ spec: NodeSpec, extras: NodeExtras?) throws(TaskGraphError) -> Int {
        guard nodes.index(of: spec.id) == nil else {
            throw TaskGraphError(code: .duplicateNode, message: "two nodes have the id \"\(spec.id)\"", path: [spec.id])
        }
        try Self.checkCost(spec.cost, of: spec.id)
        var dependencyIndices: [Int32] = []
        for dependency in spec.dependencies {
            guard dependency != spec.id else {
                throw TaskGraphError(
                    code: .selfDependency, message: "node \"\(spec.id)\" depends on itself", path: [spec.id])
            }
            guard let target = nodes.index(of: dependency) else {
                throw TaskGraphError(
                    code: .unknownDependency,
                    message: "node \"\(spec.id)\" depends on \"\(dependency)\", which is not in the graph"
                        + " (a node added while the graph runs may depend only on existing nodes)",
                    path: [spec.id, dependency]
                )
            }
            if !dependencyIndices.contains(Int32(target)) { dependencyIndices.append(Int32(target)) }
        }
        let resources = try Self.resolveResources(
            extras?.resources ?? [], of: spec.id,
            in: Dictionary(uniqueKeysWithValues: resourceNames.enumerated().map { ($1, Int32($0)) })
        )
        let position = nodes.append(
            id: spec.id, resolvedDependencies: dependencyIndices, cost: spec.cost, priority: spec.priority,
            runsAfterAnyOutcome: spec.runsAfterAnyOutcome, extras: extras
        )
        dependentStart.append(dependentStart[position])
        if !resources.isEmpty {
            if resourceUse.isEmpty { resourceUse = Array(repeating: [], count: position) }
        }
        if !resourceUse.isEmpty { resourceUse.append(resources) }
        bottomLevels.append(spec.cost)
        for dependency in dependencyIndices { addedDependents[dependency, default: []].append(Int32(position)) }
        var raise = dependencyIndices.map { (Int($0), spec.cost) }
        while let (ancestor, below) = raise.popLast() {
            let level = nodes.costs[ancestor] + below
            guard level > bottomLevels[ancestor] else { continue }
            bottomLevels[ancestor] = level
            raise += nodes.dependencies(of: ancestor).map { (Int($0), level) }
        }
        return position
    }

    private static func checkCost(_ cost: Double, of id: String) throws(TaskGraphError) {
        guard cost.isFinite, cost >= 0 else {
            throw TaskGraphError(
                code: .invalidCost,
                message: "node \"\(id)\" has cost \(cost); a cost must be finite and 0 or more",
                path: [id]
            )
        }
    }

    /// The indices of the resources a node uses, each once.
    private static func resolveResources(
        _ names: [String], of id: String, in index: [String: Int32]
    ) throws(TaskGraphError) -> [Int32] {
        var resolved: [Int32] = []
        for name in names {
            guard let resource = index[name] else {
                let known = index.isEmpty ? "none are" : index.keys.sorted().joined(separator: ", ") + " are"
                throw TaskGraphError(
                    code: .unknownResource,
                    message: "node \"\(id)\" uses resource \"\(name)\", which has no limit or rate (\(known) given)",
                    path: [id]
                )
            }
            if !resolved.contains(resource) { resolved.append(resource) }
        }
        return resolved
    }

    /// A cycle among `candidates` (nodes with a dependent that was never done: on a cycle or
    /// upstream of one), in run order, its first node repeated at the end. Every candidate has
    /// a dependent that is itself a candidate, so walking such dependents must revisit a node.
    /// Iterative, so deep graphs cannot overflow the stack.
    private static func findCycle(among candidates: Set<Int>, dependentStart: [Int32], dependentList: [Int32]) -> [Int]
    {
        var position: [Int: Int] = [:]
        var walk: [Int] = []
        var node = candidates.min()!
        while position[node] == nil {
            position[node] = walk.count
            walk.append(node)
            let dependents = dependentList[Int(dependentStart[node])..<Int(dependentStart[node + 1])]
            node = Int(dependents.first { candidates.contains(Int($0)) }!)
        }
        let cycle = Array(walk[position[node]!...])
        return cycle + [cycle[0]]
    }
}
