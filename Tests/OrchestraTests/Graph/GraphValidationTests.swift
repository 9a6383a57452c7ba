import TestSupport
import Testing

@testable import Orchestra

@Suite("Graph validation", .timeLimit(.minutes(1)), .takesTurns)
struct GraphValidationTests {
    func node(_ id: String, _ dependencies: String..., cost: Double = 1, resources: [String] = []) -> NodeSpec {
        NodeSpec(id: id, dependencies: dependencies, cost: cost, resources: resources)
    }

    func rejection(_ nodes: [NodeSpec], limits: [String: Int] = [:]) -> TaskGraphError? {
        do {
            _ = try GraphBlueprint(nodes, resourceLimits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func aCycleIsRejectedWithItsPath() throws {
        let error = try #require(rejection([node("a", "c"), node("b", "a"), node("c", "b"), node("d")]))
        #expect(error.code == .cycle)
        #expect(error.path.count == 4 && error.path.first == error.path.last)
        // The path follows the run order: each node is followed by one that depends on it.
        let ring = ["a", "b", "c", "a", "b", "c"].joined(separator: " → ")
        #expect(ring.contains(error.path.joined(separator: " → ")))
        #expect(error.message.contains("cycle"))
    }

    @Test func aCycleBehindAnAcyclicPrefixIsFound() throws {
        let nodes = [node("root"), node("x", "root", "z"), node("y", "x"), node("z", "y"), node("tail", "z")]
        let error = try #require(rejection(nodes))
        #expect(error.code == .cycle)
        #expect(Set(error.path) == ["x", "y", "z"])
    }

    @Test func anUnknownDependencyNamesBothNodes() throws {
        let error = try #require(rejection([node("profile", "login")]))
        #expect(error.code == .unknownDependency)
        #expect(error.message == "node \"profile\" depends on \"login\", which is not in the graph")
    }

    @Test func aDuplicateIdIsRejected() throws {
        let error = try #require(rejection([node("a"), node("a")]))
        #expect(error.code == .duplicateNode)
        #expect(error.path == ["a"])
    }

    @Test func aSelfDependencyIsRejected() throws {
        let error = try #require(rejection([node("a", "a")]))
        #expect(error.code == .selfDependency)
        #expect(error.message == "node \"a\" depends on itself")
    }

    @Test(arguments: [-1.0, .infinity, .nan])
    func aBadCostIsRejectedNamingNodeAndValue(cost: Double) throws {
        let error = try #require(rejection([node("slow", cost: cost)]))
        #expect(error.code == .invalidCost)
        #expect(error.message.contains("\"slow\"") && error.message.contains("\(cost)"))
    }

    @Test func aResourceWithoutALimitIsRejected() throws {
        let error = try #require(rejection([node("upload", resources: ["network"])], limits: ["db": 1]))
        #expect(error.code == .unknownResource)
        #expect(error.message == "node \"upload\" uses resource \"network\", which has no limit or rate (db are given)")
    }

    @Test func aResourceLimitBelowOneIsRejected() throws {
        let error = try #require(rejection([node("a")], limits: ["network": 0]))
        #expect(error.code == .invalidLimit)
        #expect(error.message.contains("\"network\"") && error.message.contains("0"))
    }

    @Test func bottomLevelsAreTheLongestCostPathToTheEnd() throws {
        // a(2) → b(3) → d(1); a → c(5) → d
        let blueprint = try GraphBlueprint([
            node("a", cost: 2), node("b", "a", cost: 3), node("c", "a", cost: 5), node("d", "b", "c", cost: 1),
        ])
        #expect(blueprint.bottomLevels == [8, 4, 6, 1])
    }

    @Test func aDeepChainValidatesWithoutRecursion() throws {
        let count = 100_000
        let nodes = (0..<count).map { NodeSpec(id: "n\($0)", dependencies: $0 == 0 ? [] : ["n\($0 - 1)"]) }
        let blueprint = try GraphBlueprint(nodes)
        #expect(blueprint.bottomLevels[0] == Double(count))
        var cyclic = nodes
        cyclic[0].dependencies = ["n\(count - 1)"]
        let error = try #require(rejection(cyclic))
        #expect(error.path.count == count + 1)
    }
}
