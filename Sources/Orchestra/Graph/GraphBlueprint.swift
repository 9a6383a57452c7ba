/// One node of a graph as described, before validation: what the scheduler needs to know.
struct NodeSpec: Sendable {
    var id: String
    var dependencies: [String]
    var cost: Double = 1
    var priority: Int = 0
    var resources: [String] = []
    /// An `afterOutcomesOf:` node: runs whatever its dependencies ended with.
    var runsAfterAnyOutcome = false
}

/// A validated graph in index form: dependencies, dependents, and each node's critical-path
/// length (its cost plus the longest chain of costs after it).
///
/// Building one is the validation: duplicates, unknown or self dependencies, cycles, bad costs
/// and resources without limits are rejected with a ``TaskGraphError`` naming them.
/// Complexity: O(nodes + edges).
struct GraphBlueprint: Sendable {
    var ids: [String]
    var costs: [Double]
    var priorities: [Int]
    var runsAfterAnyOutcome: [Bool]
    var dependencies: [[Int]]
    var dependents: [[Int]]
    /// For each node, the indices of the resources it uses.
    var resources: [[Int]]
    var resourceNames: [String]
    var resourceLimits: [Int]
    /// Cost of the node plus the longest cost path from it to the end of the graph.
    var bottomLevels: [Double]

    /// Node index by id.
    private var indexByID: [String: Int] = [:]

    var count: Int { ids.count }

    func index(of id: String) -> Int {
        indexByID[id]!
    }

    func indexIfPresent(of id: String) -> Int? {
        indexByID[id]
    }

    init(_ nodes: [NodeSpec], resourceLimits limits: [String: Int] = [:]) throws(TaskGraphError) {
        var index: [String: Int] = [:]
        index.reserveCapacity(nodes.count)
        for (position, node) in nodes.enumerated() {
            if index.updateValue(position, forKey: node.id) != nil {
                throw TaskGraphError(code: .duplicateNode, message: "two nodes have the id \"\(node.id)\"", path: [node.id])
            }
            try Self.checkCost(of: node)
        }
        let resourceNames = limits.keys.sorted()
        var resourceIndex: [String: Int] = [:]
        for (position, name) in resourceNames.enumerated() {
            let limit = limits[name]!
            guard limit >= 1 else {
                throw TaskGraphError(code: .invalidLimit, message: "resource \"\(name)\" has limit \(limit); a limit must be at least 1")
            }
            resourceIndex[name] = position
        }

        var dependencies = [[Int]](repeating: [], count: nodes.count)
        var dependents = [[Int]](repeating: [], count: nodes.count)
        var resources = [[Int]](repeating: [], count: nodes.count)
        for (position, node) in nodes.enumerated() {
            dependencies[position] = try Self.resolveDependencies(of: node, in: index, hint: "")
            for target in dependencies[position] { dependents[target].append(position) }
            resources[position] = try Self.resolveResources(of: node, in: resourceIndex)
        }

        self.ids = nodes.map(\.id)
        self.indexByID = index
        self.costs = nodes.map(\.cost)
        self.priorities = nodes.map(\.priority)
        self.runsAfterAnyOutcome = nodes.map(\.runsAfterAnyOutcome)
        self.dependencies = dependencies
        self.dependents = dependents
        self.resources = resources
        self.resourceNames = resourceNames
        self.resourceLimits = resourceNames.map { limits[$0]! }
        self.bottomLevels = []
        let order = try topologicalOrder()
        var levels = [Double](repeating: 0, count: nodes.count)
        for node in order.reversed() {
            var after = 0.0
            for dependent in dependents[node] { after = max(after, levels[dependent]) }
            levels[node] = costs[node] + after
        }
        bottomLevels = levels
    }

    /// Adds a node while the graph runs. It may depend only on nodes already in the graph, so
    /// it cannot close a cycle. The critical-path levels of its ancestors grow as needed.
    ///
    /// - Returns: The new node's index.
    /// - Throws: ``TaskGraphError`` for a duplicate id, an unknown or self dependency, a bad
    ///   cost or a resource without a limit.
    mutating func append(_ node: NodeSpec) throws(TaskGraphError) -> Int {
        guard indexByID[node.id] == nil else {
            throw TaskGraphError(code: .duplicateNode, message: "two nodes have the id \"\(node.id)\"", path: [node.id])
        }
        try Self.checkCost(of: node)
        let dependencyIndices = try Self.resolveDependencies(
            of: node, in: indexByID, hint: " (a node added while the graph runs may depend only on existing nodes)"
        )
        let resourceIndices = try Self.resolveResources(
            of: node, in: Dictionary(uniqueKeysWithValues: resourceNames.enumerated().map { ($1, $0) })
        )
        let position = ids.count
        ids.append(node.id)
        indexByID[node.id] = position
        costs.append(node.cost)
        priorities.append(node.priority)
        runsAfterAnyOutcome.append(node.runsAfterAnyOutcome)
        dependencies.append(dependencyIndices)
        dependents.append([])
        resources.append(resourceIndices)
        bottomLevels.append(node.cost)
        var raise = dependencyIndices.map { ($0, node.cost) }
        for dependency in dependencyIndices { dependents[dependency].append(position) }
        while let (ancestor, below) = raise.popLast() {
            let level = costs[ancestor] + below
            guard level > bottomLevels[ancestor] else { continue }
            bottomLevels[ancestor] = level
            raise += dependencies[ancestor].map { ($0, level) }
        }
        return position
    }

    private static func checkCost(of node: NodeSpec) throws(TaskGraphError) {
        guard node.cost.isFinite, node.cost >= 0 else {
            throw TaskGraphError(
                code: .invalidCost,
                message: "node \"\(node.id)\" has cost \(node.cost); a cost must be finite and 0 or more",
                path: [node.id]
            )
        }
    }

    /// The indices of `node`'s dependencies, each once.
    private static func resolveDependencies(of node: NodeSpec, in index: [String: Int], hint: String) throws(TaskGraphError) -> [Int] {
        var resolved: [Int] = []
        for dependency in node.dependencies {
            guard dependency != node.id else {
                throw TaskGraphError(code: .selfDependency, message: "node \"\(node.id)\" depends on itself", path: [node.id])
            }
            guard let target = index[dependency] else {
                throw TaskGraphError(
                    code: .unknownDependency,
                    message: "node \"\(node.id)\" depends on \"\(dependency)\", which is not in the graph\(hint)",
                    path: [node.id, dependency]
                )
            }
            if !resolved.contains(target) { resolved.append(target) }
        }
        return resolved
    }

    /// The indices of the resources `node` uses, each once.
    private static func resolveResources(of node: NodeSpec, in index: [String: Int]) throws(TaskGraphError) -> [Int] {
        var resolved: [Int] = []
        for name in node.resources {
            guard let resource = index[name] else {
                let known = index.isEmpty ? "none are" : index.keys.sorted().joined(separator: ", ") + " are"
                throw TaskGraphError(
                    code: .unknownResource,
                    message: "node \"\(node.id)\" uses resource \"\(name)\", which has no limit (\(known) given)",
                    path: [node.id]
                )
            }
            if !resolved.contains(resource) { resolved.append(resource) }
        }
        return resolved
    }

    /// Kahn's algorithm; on a cycle, finds one and throws it as a path.
    private func topologicalOrder() throws(TaskGraphError) -> [Int] {
        var remaining = dependencies.map(\.count)
        var order: [Int] = []
        order.reserveCapacity(count)
        var stack = (0..<count).filter { remaining[$0] == 0 }.reversed() as [Int]
        while let node = stack.popLast() {
            order.append(node)
            for dependent in dependents[node] {
                remaining[dependent] -= 1
                if remaining[dependent] == 0 { stack.append(dependent) }
            }
        }
        guard order.count < count else { return order }
        let cycle = findCycle(among: Set((0..<count).filter { remaining[$0] > 0 }))
        let names = cycle.map { ids[$0] }
        throw TaskGraphError(
            code: .cycle,
            message: "the dependencies form a cycle: \(names.joined(separator: " → "))",
            path: names
        )
    }

    /// A cycle among `candidates` (nodes Kahn's algorithm could not order), in dependency
    /// direction, its first node repeated at the end. Iterative, so deep graphs cannot overflow
    /// the stack.
    private func findCycle(among candidates: Set<Int>) -> [Int] {
        // Every candidate has an unfinished dependency that is itself a candidate, so walking
        // dependencies from any candidate must revisit a node.
        var position: [Int: Int] = [:]
        var walk: [Int] = []
        var node = candidates.min()!
        while position[node] == nil {
            position[node] = walk.count
            walk.append(node)
            node = dependencies[node].first { candidates.contains($0) }!
        }
        // walk[start...] follows "depends on" edges; reverse it so the path reads in run order.
        let cycle = Array(walk[position[node]!...].reversed())
        return cycle + [cycle[0]]
    }
}
