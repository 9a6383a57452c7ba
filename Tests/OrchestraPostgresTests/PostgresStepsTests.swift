import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// A run's step figures, as its coordinator judged them, kept for `orchestra status`: each
/// coordinator's figures replace the last one's (it reads the run back, so they cover it all).
@Suite(
    "PostgresJobStore: a run's step figures",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresStepsTests {
    static let step = JobKind<Int, Int>("step")

    /// A new store with one run, `run`, for `body`.
    static func withRun(_ body: (TemporaryStore, PostgresJobStore) async throws -> Void) async throws {
        try await withTemporaryStore(.postgres) { file in
            _ = try await file.open()
            let store = try file.postgresStore(tries: .init())
            var graph = DurableGraph()
            try graph.add("a", Self.step, input: 1)
            #expect(try await DurableQueue(store: store, clock: ManualClock()).submit(graph, runID: "run"))
            try await body(file, store)
        }
    }

    @Test("recorded in file order, replaced whole by the next record, dropped for a run that does not exist")
    func recordedReplacedAndDropped() async throws {
        try await Self.withRun { file, store in
            #expect(try await store.steps(of: "run").isEmpty, "no coordinator recorded any")

            let first = [
                DurableStepFigures(step: "login", forEach: false, total: nil, succeeded: 1, failed: 0, maybeSent: 0),
                DurableStepFigures(step: "each", forEach: true, total: nil, succeeded: 0, failed: 0, maybeSent: 0),
                DurableStepFigures(step: "charge", forEach: false, total: nil, succeeded: 0, failed: 0, maybeSent: 1),
            ]
            try await store.recordSteps(first, of: "run")
            #expect(try await store.steps(of: "run") == first)

            // The list was read, and a step was dropped from the file: the record is the new one, whole.
            let second = [
                DurableStepFigures(step: "each", forEach: true, total: 12, succeeded: 9, failed: 2, maybeSent: 1),
                DurableStepFigures(step: "login", forEach: false, total: nil, succeeded: 1, failed: 0, maybeSent: 0),
            ]
            try await store.recordSteps(second, of: "run")
            #expect(try await store.steps(of: "run") == second)

            try await store.recordSteps(first, of: "no-such-run")
            #expect(try await store.steps(of: "no-such-run").isEmpty)
        }
    }

    @Test(
        "given what was recorded last, only the steps that moved are written; another number of steps replaces them all"
    )
    func onlyTheStepsThatMovedAreWritten() async throws {
        try await Self.withRun { file, store in
            let steps = (0..<3).map {
                DurableStepFigures(step: "s\($0)", forEach: false, total: nil, succeeded: 0, failed: 0, maybeSent: 0)
            }
            try await store.recordSteps(steps, of: "run")
            // A mark in the first row, which a write of that row would undo.
            _ = try await file.client!.query(
                "UPDATE \(unescaped: file.schema).run_steps SET succeeded = 99 WHERE run_id = 'run' AND position = 0")
            var moved = steps
            moved[1].succeeded = 1
            try await store.recordSteps(moved, of: "run", changedFrom: steps)
            #expect(try await store.steps(of: "run").map(\.succeeded) == [99, 1, 0])
            try await store.recordSteps(moved, of: "run", changedFrom: moved)
            #expect(try await store.steps(of: "run").map(\.succeeded) == [99, 1, 0], "nothing moved: nothing written")
            // Fewer steps than last time: all of them, and nothing else, as given.
            try await store.recordSteps(Array(moved.prefix(2)), of: "run", changedFrom: moved)
            #expect(try await store.steps(of: "run") == Array(moved.prefix(2)))
        }
    }
}
