import Foundation
import OrchestraTestKit
import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra
@testable import OrchestraDurable

/// The same graph through `TaskGraph`'s scheduler (`SchedulerStateMachine`) and through a
/// store's claims (``ClaimPlanner``): the jobs start in the same order.
///
/// Three minutes, not one: a PostgreSQL case is 60 transactions one after another, each resumed
/// on the cooperative pool, and in a full `swift test` on two cores other tests' synchronous work
/// (cookie floods, large parses) holds both of the pool's threads for tens of seconds; two of five
/// full runs took the case past one minute though it takes about a second alone.
@Suite("Claim order: SchedulerStateMachine and the stores", .timeLimit(.minutes(3)), .takesTurns)
struct ClaimOrderTests {
    struct Node: Sendable {
        var id: String
        var dependencies: [String] = []
        var priority = 0
        var cost: Double = 1
        var resources: [String] = []
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var name: String
        var limit: Int
        var resourceLimits: [String: Int] = [:]
        var nodes: [Node]

        var testDescription: String { name }
    }

    /// 60 nodes, each after up to three earlier ones, with priorities, costs and resources drawn
    /// from `seed`.
    static func random(_ name: String, seed: UInt64, limit: Int, resourceLimits: [String: Int]) -> Shape {
        var random = SplitMix64(seed: seed)
        let names = resourceLimits.keys.sorted()
        let nodes = (0..<60).map { index in
            let dependencies =
                index == 0
                ? []
                : Set(
                    (0..<Int.random(in: 0...3, using: &random)).map { _ in
                        "n\(Int.random(in: 0..<index, using: &random))"
                    }
                ).sorted()
            return Node(
                id: "n\(index)", dependencies: dependencies,
                priority: Int.random(in: 0...5, using: &random) == 0 ? 1 : 0,
                cost: Double(Int.random(in: 1...3, using: &random)),
                resources: names.isEmpty || Bool.random(using: &random) ? [] : [names.randomElement(using: &random)!])
        }
        return Shape(name: name, limit: limit, resourceLimits: resourceLimits, nodes: nodes)
    }

    static let shapes: [Shape] = [
        Shape(
            name: "priority, critical path and position among roots", limit: 1,
            nodes: [
                Node(id: "short"), Node(id: "long", cost: 5), Node(id: "urgent", priority: 2),
                Node(id: "also-short"), Node(id: "after-long", dependencies: ["long"], cost: 2),
                Node(id: "last", dependencies: ["short", "after-long"]),
            ]),
        Shape(
            name: "a full resource holds no other job back", limit: 3, resourceLimits: ["h": 1],
            nodes: [
                Node(id: "h1", cost: 4, resources: ["h"]), Node(id: "h2", cost: 4, resources: ["h"]),
                Node(id: "h3", cost: 3, resources: ["h"]), Node(id: "free1"), Node(id: "free2"),
                Node(id: "free3", dependencies: ["h1"]), Node(id: "h4", dependencies: ["free1"], resources: ["h"]),
            ]),
        random("random graph, limit 1", seed: 11, limit: 1, resourceLimits: [:]),
        random("random graph, limit 4", seed: 12, limit: 4, resourceLimits: [:]),
        random("random graph, limit 4, two resources", seed: 13, limit: 4, resourceLimits: ["h": 1, "g": 2]),
        random("random graph, limit 8, one resource", seed: 14, limit: 8, resourceLimits: ["h": 2]),
    ]

    /// The start order under `SchedulerStateMachine`, the running node that started first
    /// ending first.
    static func schedulerOrder(_ shape: Shape) throws -> [String] {
        let blueprint = try GraphBlueprint(
            shape.nodes.map {
                NodeSpec(
                    id: $0.id, dependencies: $0.dependencies, cost: $0.cost, priority: $0.priority,
                    resources: $0.resources)
            }, resourceLimits: shape.resourceLimits)
        var machine = SchedulerStateMachine(blueprint, limit: shape.limit)
        var running = machine.start().launch
        var started = running
        while !running.isEmpty {
            let launched = machine.finish(running.removeFirst(), .succeeded).launch
            running += launched
            started += launched
        }
        return started.map { blueprint.id(of: $0) }
    }

    /// The start order through a store's claims, under the same rule: one worker claims what it
    /// may, and the job it claimed first ends first, its outcome recorded with the next claim.
    static func storeOrder(_ shape: Shape, _ kind: StoreKind) async throws -> [String] {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            var graph = DurableGraph()
            for node in shape.nodes {
                try graph.add(
                    node.id, add, input: [], after: node.dependencies,
                    options: DurableJobOptions(priority: node.priority, cost: node.cost, resources: node.resources))
            }
            #expect(
                try await queue.submit(graph, runID: "run", limit: shape.limit, resourceLimits: shape.resourceLimits))
            // Every time the same: jobs made ready later are due at the same time as the first.
            let claim = Claim(
                worker: "w", kinds: [add.name], limit: 1_000, now: epoch, leaseExpiry: epoch.addingTimeInterval(3_600))
            var running = try await store.record([], thenClaim: claim, now: epoch).claimed
            var started = running.map(\.key.jobID)
            while !running.isEmpty {
                let ended = AttemptOutcome(job: running.removeFirst(), outcome: .succeeded(Data("0".utf8)))
                let (recorded, claimed) = try await store.record([ended], thenClaim: claim, now: epoch)
                #expect(recorded.map(\.recorded) == [true])
                running += claimed
                started += claimed.map(\.key.jobID)
            }
            #expect(try await store.run("run")?.state == .succeeded)
            return started
        }
    }

    @Test(arguments: shapes, StoreKind.available)
    func theStoresStartJobsInTheSchedulersOrder(_ shape: Shape, _ kind: StoreKind) async throws {
        let expected = try Self.schedulerOrder(shape)
        #expect(expected.count == shape.nodes.count)
        #expect(try await Self.storeOrder(shape, kind) == expected)
    }
}
