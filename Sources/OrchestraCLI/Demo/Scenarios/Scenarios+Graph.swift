import HTTPTypes
import Orchestra

// Operations that depend on each other ("op1 after op and op3, op2 independent, at
// most 5 at once": NSOperationQueue + addDependency), as a TaskGraph of requests.

extension Scenario {
    static let graph = Scenario(
        name: "graph",
        title: "A dependency graph: op1 after op and op3, op2 independent, at most 5 at once",
        summary: "op1 after op and op3; op2 independent; at most 5",
        replaces:
            "NSOperationQueue (maxConcurrentOperationCount = 5) + async NSOperation subclasses + op1.addDependency(op)",
        orchestra: """
            let op = graph.add("op") { try await get("/payload/…") }
            let op1 = graph.add("op1", after: op, op3) { a, b in try await get(…) }
            let result = try await graph.run(limit: 5)
            """,
        limit: 5,
        lanes: { _ in ["op", "op1", "op2", "op3"].map(LaneSpec.download) },
        body: { stage in
            /// One operation: a request for `bytes` bytes that takes `latency` ms on the server.
            @Sendable func operation(_ name: String, bytes: Int, latency: Int) async throws -> Int {
                try await stage.perform(stage.lane(named: name)) {
                    try await stage.get(stage.url("payload/\(bytes)", latency: latency)).body.count
                }
            }

            let graph = TaskGraph()
            let op = graph.add("op") { try await operation("op", bytes: 20_000, latency: 700) }
            let op3 = graph.add("op3") { try await operation("op3", bytes: 8_000, latency: 400) }
            let op1 = graph.add("op1", after: op, op3) { fromOp, fromOp3 in
                stage.note("op1 starts: op (\(Format.bytes(fromOp))) and op3 (\(Format.bytes(fromOp3))) have returned")
                return try await operation("op1", bytes: 4_000, latency: 300)
            }
            let op2 = graph.add("op2") { try await operation("op2", bytes: 12_000, latency: 900) }

            let result = try await graph.run(limit: 5)
            guard result.allSucceeded else {
                let problems = result.problems.map { "\($0.id) \($0.state)" }.joined(separator: ", ")
                stage.fact("every operation succeeded", problems, holds: false)
                return
            }
            let started = { (id: String) in result.outcome(id: id)?.started ?? .zero }
            let ended = { (id: String) in result.outcome(id: id)?.ended ?? .zero }
            let afterBoth = started(op1.id) >= ended(op.id) && started(op1.id) >= ended(op3.id)
            stage.fact("op1 started after op and op3 returned", afterBoth ? "yes" : "no", holds: afterBoth)
            let order = result.nodeIDs.sorted { ended($0) < ended($1) }
            stage.fact("finish order", order.joined(separator: " "))
            stage.note(
                "op2 ran beside them, independent; \(result.nodeIDs.count) operations, no subclass, no KVO", tone: .good
            )
            _ = op2
        })
}
