import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraOperations

@Suite("Operation dependency checks", .timeLimit(.minutes(1)), .takesTurns)
struct DependencyCheckTests {
    func named(_ name: String) -> BlockOperation {
        let operation = BlockOperation {}
        operation.name = name
        return operation
    }

    @Test func aCycleIsFoundWithItsPathInRunOrder() throws {
        let (a, b, c, d) = (named("a"), named("b"), named("c"), named("d"))
        b.addDependency(a)
        c.addDependency(b)
        a.addDependency(c)  // Foundation accepts this; a queue would then hang silently.
        d.addDependency(a)
        let error = #expect(throws: TaskGraphError.self) { try [d, a, b, c].validateDependencies() }
        #expect(error?.code == .cycle)
        let path = error?.path ?? []
        #expect(path.count == 4 && path.first == path.last)
        #expect(Set(path) == ["\"a\"", "\"b\"", "\"c\""])
        // Run order: each operation is followed by one that depends on it.
        let ring = ["\"a\"", "\"b\"", "\"c\"", "\"a\"", "\"b\"", "\"c\""].joined(separator: " → ")
        #expect(ring.contains(path.joined(separator: " → ")))
        #expect(error?.message.contains("cycle") == true)
    }

    @Test func aCycleReachedOnlyThroughDependenciesOutsideTheListIsFound() throws {
        let (a, b, c) = (named("a"), named("b"), named("c"))
        b.addDependency(a)
        a.addDependency(b)
        c.addDependency(a)
        let error = #expect(throws: TaskGraphError.self) { try [c].validateDependencies() }
        #expect(error?.code == .cycle)
    }

    @Test func anAcyclicDiamondPasses() throws {
        let (top, left, right, bottom) = (named("top"), named("left"), named("right"), named("bottom"))
        left.addDependency(top)
        right.addDependency(top)
        bottom.addDependency(left)
        bottom.addDependency(right)
        try [bottom, right, left, top].validateDependencies()
    }

    @Test func addDependencyCheckedRefusesItselfAndANewCycleBeforeFoundationSeesThem() throws {
        let (a, b, c) = (named("a"), named("b"), named("c"))
        let itself = #expect(throws: TaskGraphError.self) { try a.addDependencyChecked(a) }
        #expect(itself?.code == .selfDependency)
        #expect(itself?.message == "operation \"a\" cannot depend on itself")
        #expect(a.dependencies.isEmpty)

        try b.addDependencyChecked(a)
        try c.addDependencyChecked(b)
        let cycle = #expect(throws: TaskGraphError.self) { try a.addDependencyChecked(c) }
        #expect(cycle?.code == .cycle)
        #expect(cycle?.path == ["\"a\"", "\"b\"", "\"c\"", "\"a\""])
        #expect(a.dependencies.isEmpty, "the refused dependency was not added")
    }

    @Test func addOperationsCheckingDependenciesAddsNothingWhenItRefuses() async throws {
        let (a, b) = (named("a"), named("b"))
        a.addDependency(b)
        b.addDependency(a)
        let queue = OperationQueue()
        queue.isSuspended = true
        #expect(throws: TaskGraphError.self) { try queue.addOperationsCheckingDependencies([a, b]) }
        #expect(queue.operationCount == 0)

        let ok = named("ok")
        try queue.addOperationsCheckingDependencies([ok])
        #expect(queue.operationCount == 1)
        queue.isSuspended = false
        try await waitUntil("ran") { ok.isFinished }
    }

    @Test func unnamedOperationsAreNamedByTypeAndAddress() throws {
        let anonymous = BlockOperation {}
        let error = #expect(throws: TaskGraphError.self) { try anonymous.addDependencyChecked(anonymous) }
        #expect(error?.message.hasPrefix("operation BlockOperation@") == true)
    }
}
