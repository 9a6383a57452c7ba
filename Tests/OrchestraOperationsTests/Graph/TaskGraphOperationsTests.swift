import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraOperations

@Suite("Operations in a TaskGraph", .timeLimit(.minutes(1)), .takesTurns)
struct TaskGraphOperationsTests {
    @Test func operationsRunAsAGraphWithItsLimitAndOrder() async throws {
        let probe = ConcurrencyProbe()
        let log = EventLog<String>()
        let operations: [Operation] = (0..<20).map { index in
            let operation = BlockOperation {
                probe.enter()
                log.append("op\(index)")
                probe.leave()
            }
            operation.name = "op\(index)"
            return operation
        }
        // A chain 0 → 1 → … → 9, and 10…19 independent.
        for index in 1..<10 { operations[index].addDependency(operations[index - 1]) }
        let graph = try TaskGraph(operations: operations)
        let result = try await graph.run(limit: 3)
        #expect(result.allSucceeded)
        #expect(probe.maximum <= 3)
        let chain = log.events.filter {
            ["op0", "op1", "op2", "op3", "op4", "op5", "op6", "op7", "op8", "op9"].contains($0)
        }
        #expect(chain == (0..<10).map { "op\($0)" })
        #expect(operations.allSatisfy { $0.isFinished })
    }

    @Test func resultOperationsPassTheirValueAndFailuresSkipDependents() async throws {
        let token = ResultOperation<String> { $0.finish(with: .success("t")) }
        token.name = "token"
        let broken = AsyncBlockOperation { $0.finish(throwing: TestError("down")) }
        broken.name = "broken"
        let report = BlockOperation {}
        report.name = "report"
        report.addDependency(broken)
        let result = try await TaskGraph(operations: [token, broken, report]).run()
        #expect(result.outcome(id: "token")?.value as? String == "t")
        #expect(result.outcome(id: "broken")?.error as? TestError == TestError("down"))
        #expect(result.outcome(id: "report")?.state.description == "skipped because \"broken\" did not succeed")
        #expect(!report.isFinished, "a skipped operation never starts")
    }

    @Test func anAsyncOperationInTheGraphFinishesItsNodeOnlyWhenItFinishes() async throws {
        let log = EventLog<String>()
        let first = ManualOperation("first", log: log)
        let second = BlockOperation { log.append("second") }
        second.name = "second"
        second.addDependency(first)
        let run = Task { try await TaskGraph(operations: [first, second]).run(limit: 2) }
        try await waitUntil("first started") { first.isExecuting }
        #expect(log.events == ["start first"])
        first.complete()
        let result = try await withHangGuard { try await run.value }
        #expect(result.allSucceeded)
        #expect(log.events == ["start first", "finish first", "second"])
    }

    @Test func cancellingTheGraphRunCancelsRunningOperations() async throws {
        let log = EventLog<String>()
        let stuck = ManualOperation("stuck", log: log)
        let run = Task { try await TaskGraph(operations: [stuck]).run() }
        try await waitUntil("stuck started") { stuck.isExecuting }
        run.cancel()
        await #expect(throws: CancellationError.self) { try await withHangGuard { try await run.value } }
        #expect(stuck.isCancelled && stuck.isFinished)
    }

    @Test func aDependencyOutsideTheOperationsIsRefusedNamingBoth() throws {
        let outside = BlockOperation {}
        outside.name = "outside"
        let inside = BlockOperation {}
        inside.name = "inside"
        inside.addDependency(outside)
        let error = #expect(throws: TaskGraphError.self) { try TaskGraph(operations: [inside]) }
        #expect(error?.code == .unknownDependency)
        #expect(
            error?.message == "operation \"inside\" depends on \"outside\", which is not among the operations given")
    }

    @Test func aCycleAmongOperationsIsRejectedByTheGraphBeforeAnythingRuns() async throws {
        let a = BlockOperation {}
        a.name = "a"
        let b = BlockOperation {}
        b.name = "b"
        a.addDependency(b)
        b.addDependency(a)
        let graph = try TaskGraph(operations: [a, b])
        let error = await #expect(throws: TaskGraphError.self) { try await graph.run() }
        #expect(error?.code == .cycle)
        #expect(!a.isFinished && !b.isFinished)
    }

    @Test func twoOperationsWithOneNameAreRejectedBeforeAnythingRuns() async throws {
        let first = BlockOperation {}
        first.name = "fetch"
        let second = BlockOperation {}
        second.name = "fetch"
        second.addDependency(first)
        let graph = try TaskGraph(operations: [first, second])
        let error = await #expect(throws: TaskGraphError.self) { try await graph.run() }
        #expect(error?.code == .duplicateNode)
        #expect(error?.message.contains("fetch") == true)
        #expect(!first.isFinished && !second.isFinished)
    }

    @Test func dependenciesComeFromTheOperationsWhereverTheyAreInTheArray() async throws {
        // Dependents listed before their dependencies, and unnamed operations.
        let log = EventLog<String>()
        let save = BlockOperation { log.append("save") }
        let parse = BlockOperation { log.append("parse") }
        let fetch = BlockOperation { log.append("fetch") }
        save.addDependency(parse)
        parse.addDependency(fetch)
        let result = try await TaskGraph(operations: [save, parse, fetch]).run(limit: 3)
        #expect(result.allSucceeded)
        #expect(log.events == ["fetch", "parse", "save"])
    }

    @Test func addOperationsAddsNodesToAGraphThatAlreadyHasSome() async throws {
        let graph = TaskGraph()
        let log = EventLog<String>()
        let native = graph.add("native") {
            log.append("native")
            return 1
        }
        let fetch = BlockOperation { log.append("fetch") }
        fetch.name = "fetch"
        let parse = BlockOperation { log.append("parse") }
        parse.name = "parse"
        parse.addDependency(fetch)
        try graph.addOperations([parse, fetch])
        graph.add("report", afterOutcomesOf: native) { _ in log.append("report") }
        #expect(graph.nodeIDs == ["native", "parse", "fetch", "report"])
        let result = try await graph.run(limit: 1)
        #expect(result.allSucceeded)
        let order = log.events
        #expect(order.count == 4)
        #expect(try #require(order.firstIndex(of: "fetch")) < #require(order.firstIndex(of: "parse")))
        #expect(fetch.isFinished && parse.isFinished)
    }

    @Test func anUnnamedOperationIsNamedByItsTypeAndAddress() throws {
        let graph = TaskGraph()
        let first = BlockOperation {}
        let second = BlockOperation {}
        let named = BlockOperation {}
        named.name = "named"
        try graph.addOperations([first, second, named])
        let ids = graph.nodeIDs
        #expect(ids.count == 3)
        #expect(ids[0].hasPrefix("BlockOperation@") && ids[1].hasPrefix("BlockOperation@"), "\(ids)")
        #expect(ids[0] != ids[1], "two unnamed operations are two nodes")
        #expect(ids[2] == "named")
    }

    @Test func aRefusedBatchOfOperationsAddsNothing() throws {
        let graph = TaskGraph()
        graph.add("native") { 1 }
        let fine = BlockOperation {}
        fine.name = "fine"
        let outside = BlockOperation {}
        outside.name = "outside"
        let inside = BlockOperation {}
        inside.name = "inside"
        inside.addDependency(outside)
        let error = #expect(throws: TaskGraphError.self) { try graph.addOperations([fine, inside]) }
        #expect(error?.code == .unknownDependency)
        #expect(graph.nodeIDs == ["native"], "not even the operation before the bad one")
    }
}
