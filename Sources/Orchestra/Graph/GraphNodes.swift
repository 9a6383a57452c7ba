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

/// What a node needs besides its cost and priority, kept out of line because most nodes use
/// none of it (a `RetryPolicy` alone is about 100 bytes).
final class NodeExtras: Sendable {
    let timeout: Duration?
    let retry: RetryPolicy
    let resources: [String]

    /// `nil` when every field has its default.
    static func make(timeout: Duration?, retry: RetryPolicy, resources: [String]) -> NodeExtras? {
        if timeout == nil, retry.maxAttempts <= 1, resources.isEmpty { return nil }
        return NodeExtras(timeout: timeout, retry: retry, resources: resources)
    }

    private init(timeout: Duration?, retry: RetryPolicy, resources: [String]) {
        self.timeout = timeout
        self.retry = retry
        self.resources = resources
    }
}

/// A graph's nodes as described, one array per field (no per-node object), in insertion order.
///
/// Dependencies are resolved to node indices as nodes are added, so validating and running a
/// graph hashes no id again: an entry `>= 0` is a node index; an entry `< 0` is `~k`, a name in
/// ``unresolvedNames`` that no node had when the dependency was declared (a graph built from
/// data may name a node before adding it), resolved by ``GraphBlueprint``.
///
/// Every node's entries lie in one flat array, node after node (no array, so no allocation,
/// per node; a pass over the graph reads them in order). A dependency added to or removed from
/// a node other than the last moves that node's entries to ``editedDependencies``;
/// ``resolve()`` lays them flat again.
struct GraphNodes: Sendable {
    private(set) var ids: [String] = []
    /// The first node with each id.
    private(set) var indexByID: [String: Int32] = [:]
    /// Nodes whose id an earlier node already had, in insertion order.
    private(set) var duplicates: [Int32] = []
    /// The entries of node `n` are `dependencyList[dependencyStart[n] ..< dependencyStart[n + 1]]`,
    /// unless ``editedDependencies`` has them.
    private(set) var dependencyStart: [Int32] = [0]
    private(set) var dependencyList: [Int32] = []
    /// Entries of nodes changed after a later node was added; empty once resolved.
    private var editedDependencies: [Int32: [Int32]] = [:]
    private(set) var unresolvedNames: [String] = []
    /// How many dependency entries are unresolved names.
    private(set) var unresolvedCount = 0
    private(set) var costs: [Double] = []
    private(set) var priorities: [Int] = []
    private(set) var runsAfterAnyOutcome: [Bool] = []
    private(set) var extras: [NodeExtras?] = []
    /// Whether any node names a resource.
    private(set) var usesResources = false
    /// Whether any node has a priority other than 0, or extras: when none has, a run reads
    /// neither array (one cache miss fewer each per node started, in a graph too large for the
    /// cache).
    private var usesPriorities = false
    private var usesExtras = false

    var count: Int { ids.count }

    /// Makes room for `capacity` nodes in every per-node array.
    mutating func reserveCapacity(_ capacity: Int) {
        ids.reserveCapacity(capacity)
        indexByID.reserveCapacity(capacity)
        dependencyStart.reserveCapacity(capacity + 1)
        costs.reserveCapacity(capacity)
        priorities.reserveCapacity(capacity)
        runsAfterAnyOutcome.reserveCapacity(capacity)
        extras.reserveCapacity(capacity)
    }

    init() {}

    init(_ specs: [NodeSpec]) {
        for spec in specs {
            append(
                id: spec.id, dependencies: spec.dependencies, cost: spec.cost, priority: spec.priority,
                runsAfterAnyOutcome: spec.runsAfterAnyOutcome,
                extras: NodeExtras.make(timeout: nil, retry: .never, resources: spec.resources)
            )
        }
    }

    /// The index of the first node with `id`.
    func index(of id: String) -> Int? {
        indexByID[id].map(Int.init)
    }

    func resources(of node: Int) -> [String] {
        self.extras(of: node)?.resources ?? []
    }

    func priority(of node: Int) -> Int {
        usesPriorities ? priorities[node] : 0
    }

    func extras(of node: Int) -> NodeExtras? {
        usesExtras ? extras[node] : nil
    }

    /// The entries of `node`: node indices once resolved.
    func dependencies(of node: Int) -> ArraySlice<Int32> {
        if !editedDependencies.isEmpty, let edited = editedDependencies[Int32(node)] { return edited[...] }
        return dependencyList[Int(dependencyStart[node])..<Int(dependencyStart[node + 1])]
    }

    /// How many entries `node` has.
    func dependencyCount(of node: Int) -> Int {
        if !editedDependencies.isEmpty, let edited = editedDependencies[Int32(node)] { return edited.count }
        return Int(dependencyStart[node + 1] - dependencyStart[node])
    }

    /// Whether the entries are laid flat (nothing edited): then ``dependencyStart`` and
    /// ``dependencyList`` hold every node's. True after ``resolve()``.
    var dependenciesAreFlat: Bool { editedDependencies.isEmpty }

    /// The ids of `node`'s dependencies, as declared (each once).
    func dependencyIDs(of node: Int) -> [String] {
        dependencies(of: node).map(name(of:))
    }

    private func name(of entry: Int32) -> String {
        entry >= 0 ? ids[Int(entry)] : unresolvedNames[Int(~entry)]
    }

    /// Adds a node; returns its index. Never fails: problems (a duplicate id, an unknown
    /// dependency, a bad cost) are reported by ``GraphBlueprint``.
    @discardableResult
    mutating func append(
        id: String, dependencies names: some Sequence<String>, cost: Double, priority: Int,
        runsAfterAnyOutcome: Bool, extras: NodeExtras?
    ) -> Int {
        var entries: [Int32] = []
        for name in names { addEntry(for: name, to: &entries) }
        return append(
            id: id, resolvedDependencies: entries, cost: cost, priority: priority,
            runsAfterAnyOutcome: runsAfterAnyOutcome, extras: extras)
    }

    /// Adds a node whose dependencies are already node indices (each once).
    @discardableResult
    mutating func append(
        id: String, resolvedDependencies entries: [Int32], cost: Double, priority: Int,
        runsAfterAnyOutcome: Bool, extras: NodeExtras?
    ) -> Int {
        let node = ids.count
        checkArgument(node < Int(Int32.max), "TaskGraph: more than \(Int32.max) nodes")
        checkArgument(
            dependencyList.count + entries.count < Int(Int32.max), "TaskGraph: more than \(Int32.max) dependencies")
        ids.append(id)
        if indexByID[id] == nil {
            indexByID[id] = Int32(node)
        } else {
            duplicates.append(Int32(node))
        }
        dependencyList.append(contentsOf: entries)
        dependencyStart.append(Int32(dependencyList.count))
        costs.append(cost)
        priorities.append(priority)
        self.runsAfterAnyOutcome.append(runsAfterAnyOutcome)
        self.extras.append(extras)
        if priority != 0 { usesPriorities = true }
        if let extras {
            usesExtras = true
            if !extras.resources.isEmpty { usesResources = true }
        }
        return node
    }

    /// Makes `node` depend on the node named `name`, if it does not already.
    mutating func addDependency(_ node: Int, on name: String) {
        var entries = Array(dependencies(of: node))
        let before = entries.count
        addEntry(for: name, to: &entries)
        guard entries.count > before else { return }
        if node == count - 1, editedDependencies[Int32(node)] == nil {
            // The last node's entries end the flat array: it grows in place.
            dependencyList.append(entries[before])
            dependencyStart[node + 1] += 1
        } else {
            editedDependencies[Int32(node)] = entries
        }
    }

    /// Removes `node`'s dependency on `name`, if it has one.
    mutating func removeDependency(_ node: Int, on name: String) {
        var entries = Array(dependencies(of: node))
        guard let position = entries.firstIndex(where: { self.name(of: $0) == name }) else { return }
        if entries[position] < 0 { unresolvedCount -= 1 }
        entries.remove(at: position)
        editedDependencies[Int32(node)] = entries
    }

    private mutating func addEntry(for name: String, to entries: inout [Int32]) {
        guard !entries.contains(where: { self.name(of: $0) == name }) else { return }
        if let target = indexByID[name] {
            entries.append(target)
        } else {
            unresolvedNames.append(name)
            unresolvedCount += 1
            entries.append(~Int32(unresolvedNames.count - 1))
        }
    }

    /// Replaces every unresolved entry by the node it names now, and lays edited entries flat.
    ///
    /// - Throws: ``TaskGraphError`` for a name no node has.
    mutating func resolve() throws(TaskGraphError) {
        guard unresolvedCount > 0 || !editedDependencies.isEmpty else { return }
        var start: [Int32] = [0]
        start.reserveCapacity(count + 1)
        var list: [Int32] = []
        list.reserveCapacity(dependencyList.count)
        for node in 0..<count {
            let entries = dependencies(of: node)
            if unresolvedCount == 0 || !entries.contains(where: { $0 < 0 }) {
                list.append(contentsOf: entries)
            } else {
                let first = list.count
                for entry in entries {
                    var target = entry
                    if entry < 0 {
                        let name = unresolvedNames[Int(~entry)]
                        guard let found = indexByID[name] else {
                            throw TaskGraphError(
                                code: .unknownDependency,
                                message: "node \"\(ids[node])\" depends on \"\(name)\", which is not in the graph",
                                path: [ids[node], name]
                            )
                        }
                        target = found
                    }
                    if !list[first...].contains(target) { list.append(target) }
                }
            }
            start.append(Int32(list.count))
        }
        dependencyStart = start
        dependencyList = list
        editedDependencies = [:]
        unresolvedNames = []
        unresolvedCount = 0
    }
}
