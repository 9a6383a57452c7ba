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

    @Test("recorded in file order, replaced whole by the next record, dropped for a run that does not exist")
    func recordedReplacedAndDropped() async throws {
        try await withTemporaryStore(.postgres) { file in
            _ = try await file.open()
            let store = try file.postgresStore(tries: .init())
            let queue = DurableQueue(store: store, clock: ManualClock())
            var graph = DurableGraph()
            try graph.add("a", Self.step, input: 1)
            #expect(try await queue.submit(graph, runID: "run"))
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
}
