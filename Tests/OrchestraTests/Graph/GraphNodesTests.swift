import Testing

@testable import Orchestra

@Suite("Graph nodes", .timeLimit(.minutes(1)))
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

    @Test func aNameNoNodeHasIsAnErrorNamingBoth() {
        var nodes = GraphNodes()
        add(&nodes, "a")
        add(&nodes, "b", "a", "ghost")
        let error = #expect(throws: TaskGraphError.self) { try nodes.resolve() }
        #expect(error?.code == .unknownDependency)
        #expect(error?.path == ["b", "ghost"])
    }
}
