import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// An ended run's payloads leave the store: the inputs and outputs its jobs carried (for an
/// HTTP job, a request's credentials and a login's token) are cleared once nothing can read
/// them, and kept while something may: a run still going, and the uncertain jobs that
/// `resendUncertain` may send again (with the outputs a process going on with the run reads back).
@Suite(
    "PostgresJobStore: an ended run's inputs and outputs cleared",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresPayloadsTests {
    static let add = JobKind<[Int], Int>("add")
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    static func claim(limit: Int, at now: Date = epoch, lease: TimeInterval = 3_600) -> Claim {
        Claim(worker: "w", kinds: [add.name], limit: limit, now: now, leaseExpiry: now.addingTimeInterval(lease))
    }

    /// Each job of the store's run "run": its state, the bytes of its input, and whether it has
    /// an output and an error.
    static func payloads(_ file: TemporaryStore) async throws -> [String: (String, Int, Bool, Bool)] {
        var found: [String: (String, Int, Bool, Bool)] = [:]
        for try await (id, state, input, output, error) in try await file.client!.query(
            """
            SELECT id, state, octet_length(input), output IS NOT NULL, error IS NOT NULL
            FROM \(unescaped: file.schema).jobs WHERE run_id = 'run'
            """
        ).decode((String, String, Int, Bool, Bool).self) {
            found[id] = (state, input, output, error)
        }
        return found
    }

    @Test func anEndedRunsInputsAndOutputsAreClearedAndItsCountsKept() async throws {
        try await withTemporaryStore(.postgres) { file in
            _ = try await file.open()
            let store = try file.postgresStore(tries: .init())
            var graph = DurableGraph()
            try graph.add("a", Self.add, input: [1, 2])
            try graph.add("b", Self.add, input: [3], after: ["a"])
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: Self.epoch)
            #expect(try await queue.submit(graph, runID: "run", limit: 10))

            let a = try #require(
                try await store.record([], thenClaim: Self.claim(limit: 1), now: Self.epoch).claimed.first)
            let b = try #require(
                try await store.record(
                    [AttemptOutcome(job: a, outcome: .succeeded(Data("3".utf8)))], thenClaim: Self.claim(limit: 1),
                    now: Self.epoch
                ).claimed.first)
            // Still running: nothing is cleared, whatever is asked.
            #expect(try await store.forgetPayloads(ofEndedRun: "run") == .init(jobs: 0, outputs: false))
            #expect(try await Self.payloads(file)["a"].map { $0.1 > 0 && $0.2 } == true)

            _ = try await store.record(
                [AttemptOutcome(job: b, outcome: .failed("no: token s3cr3t", retryAt: nil))], thenClaim: nil,
                now: Self.epoch)
            #expect(try await store.run("run")?.state == .failed)
            #expect(try await store.forgetPayloads(ofEndedRun: "run") == .init(jobs: 2, outputs: true))
            let payloads = try await Self.payloads(file)
            #expect(
                payloads["a"].map { [$0.0, "\($0.1)", "\($0.2)", "\($0.3)"] } == ["succeeded", "0", "false", "false"])
            #expect(
                payloads["b"].map { [$0.0, "\($0.1)", "\($0.2)", "\($0.3)"] } == ["failed", "0", "false", "false"])
            // The counts of `orchestra status` are the same.
            let summary = try #require(try await store.runSummaries(id: "run", limit: 1).first)
            #expect(summary.jobs[.succeeded] == 1 && summary.jobs[.failed] == 1)
            // Done once: a second call finds nothing left to clear.
            #expect(try await store.forgetPayloads(ofEndedRun: "run") == .init(jobs: 0, outputs: true))
            // An unknown run: nothing.
            #expect(try await store.forgetPayloads(ofEndedRun: "other") == .init(jobs: 0, outputs: false))
        }
    }

    @Test func anUncertainJobKeepsItsInputAndTheRunItsOutputs() async throws {
        try await withTemporaryStore(.postgres) { file in
            _ = try await file.open()
            let store = try file.postgresStore(tries: .init())
            var graph = DurableGraph()
            try graph.add("a", Self.add, input: [1])
            try graph.add("p", Self.add, input: [2], options: DurableJobOptions(atMostOnce: true))
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: Self.epoch)
            #expect(try await queue.submit(graph, runID: "run", limit: 10))
            // Both claimed under a lease of a minute; `a` ends, `p`'s worker is never heard of again.
            let claimed = try await store.record([], thenClaim: Self.claim(limit: 2, lease: 60), now: Self.epoch)
                .claimed
            let a = try #require(claimed.first { $0.key.jobID == "a" })
            _ = try await store.record(
                [AttemptOutcome(job: a, outcome: .succeeded(Data("1".utf8)))], thenClaim: nil, now: Self.epoch)
            // A claim after the lease ended finds `p` may have been sent: uncertain, the run ended.
            _ = try await store.record([], thenClaim: Self.claim(limit: 1, at: Self.epoch + 120), now: Self.epoch + 120)
            #expect(try await Self.payloads(file)["p"]?.0 == "uncertain")
            #expect(try await store.run("run")?.state != .running)

            #expect(try await store.forgetPayloads(ofEndedRun: "run") == .init(jobs: 1, outputs: false))
            let payloads = try await Self.payloads(file)
            // `a`'s input is gone, its output kept (read back by a process going on with the run);
            // `p` keeps its input, which `resendUncertain` sends again.
            #expect(payloads["a"].map { [$0.0, "\($0.1)", "\($0.2)"] } == ["succeeded", "0", "true"])
            #expect(payloads["p"].map { $0.1 > 0 } == true)
        }
    }
}
