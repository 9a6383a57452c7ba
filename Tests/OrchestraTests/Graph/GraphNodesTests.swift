import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

@Suite("Graph nodes", .timeLimit(.minutes(1)), .takesTurns)
struct GraphNodesTests {
    func add(_ nodes: inout GraphNodes, _ id: String, _ dependencies: String...) {
        nodes.append(
            id: id, dependencies: dependencies, cost: 1, priority: 0, runsAfterAnyOutcome: false, extras: nil)
    }

    func dependencyIDs(_ nodes: GraphNodes) -> [[String]] {
        (0..<nodes.count).map { nodes.dependencyIDs(of: $0) }
    }

    /// Dependencies lie flat, node after node; edits to a node in the middle, names declared
    /// before their node and nodes added after an edit all read back as declared, and resolving
    /// lays everything flat again with the names turned into indices.
    @Test func editsAndForwardNamesReadBackAsDeclaredAndResolveFlat() throws {
        var nodes = GraphNodes()
        add(&nodes, "a", "later")
        add(&nodes, "b", "a")
        add(&nodes, "c", "a", "b")
        nodes.addDependency(0, on: "c")  // a node in the middle of the flat array
        nodes.removeDependency(2, on: "a")
        nodes.addDependency(2, on: "b")  // already there: no second entry
        add(&nodes, "later", "b")
        nodes.addDependency(3, on: "a")  // the last node grows in place
        #expect(dependencyIDs(nodes) == [["later", "c"], ["a"], ["b"], ["b", "a"]])
        #expect(!nodes.dependenciesAreFlat)

        try nodes.resolve()
        #expect(nodes.dependenciesAreFlat)
        #expect(nodes.dependencyList.allSatisfy { $0 >= 0 }, "every name is now a node index")
        #expect(dependencyIDs(nodes) == [["later", "c"], ["a"], ["b"], ["b", "a"]])
        #expect((0..<nodes.count).map { nodes.dependencyCount(of: $0) } == [2, 1, 1, 2])
    }

    /// Random sequences of nodes added (some naming nodes not added yet), dependencies added
    /// and removed, against a plain model (each node's ids as declared, each once, in order):
    /// the nodes read back as the model says before and after resolving, and resolved they lie
    /// flat with every entry a node index.
    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func randomEditsReadBackAsAPlainModelSays(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        var nodes = GraphNodes()
        var model: [[String]] = []
        let names = (0..<60).map { "n\($0)" }
        func declare(_ name: String, on node: Int) {
            if !model[node].contains(name) { model[node].append(name) }
        }
        for _ in 0..<400 {
            let roll = Int.random(in: 0..<10, using: &generator)
            if model.count < names.count, roll < 3 || model.isEmpty {
                // A new node, naming up to 3 ids (maybe of nodes not added yet, maybe twice).
                let id = names[model.count]
                let named = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                    names.randomElement(using: &generator)!
                }
                nodes.append(
                    id: id, dependencies: named, cost: 1, priority: 0, runsAfterAnyOutcome: false, extras: nil)
                model.append([])
                for name in named { declare(name, on: model.count - 1) }
            } else if roll < 7 {
                let node = Int.random(in: 0..<model.count, using: &generator)
                let name = names.randomElement(using: &generator)!
                nodes.addDependency(node, on: name)
                declare(name, on: node)
            } else {
                let node = Int.random(in: 0..<model.count, using: &generator)
                let name = model[node].randomElement(using: &generator) ?? names[0]
                nodes.removeDependency(node, on: name)
                model[node].removeAll { $0 == name }
            }
            #expect(dependencyIDs(nodes) == model, "seed \(seed)")
        }
        // Names of nodes never added make resolving fail; drop them, then it must succeed.
        let added = Set(names.prefix(model.count))
        for node in model.indices {
            for name in model[node] where !added.contains(name) {
                nodes.removeDependency(node, on: name)
            }
            model[node].removeAll { !added.contains($0) }
        }
        try nodes.resolve()
        #expect(nodes.dependenciesAreFlat)
        #expect(nodes.dependencyList.allSatisfy { $0 >= 0 })
        #expect(dependencyIDs(nodes) == model, "seed \(seed)")
        #expect((0..<nodes.count).map { nodes.dependencyCount(of: $0) } == model.map(\.count))
    }

    @Test func aNameNoNodeHasIsAnErrorNamingBoth() {
        var nodes = GraphNodes()
        add(&nodes, "a")
        add(&nodes, "b", "a", "ghost")
        let error = #expect(throws: TaskGraphError.self) { try nodes.resolve() }
        #expect(error?.code == .unknownDependency)
        #expect(error?.path == ["b", "ghost"])
    }
}
