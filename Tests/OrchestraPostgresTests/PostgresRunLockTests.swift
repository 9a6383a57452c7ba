import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// The lock outcomes take on their run's row. A run open for jobs cannot end, so the outcomes of
/// its jobs take a shared lock, which appends (the coordinator's, with every batch of requests)
/// do not wait for; a close waits for them, and an outcome that finds the run closed takes the
/// exclusive lock, so that the run ends once its last job has, whoever records it.
@Suite(
    "PostgresJobStore: the run's lock while its outcomes are recorded",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns, .serialized)
struct PostgresRunLockTests {
    static let add = JobKind<[Int], Int>("add")
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)
    static let logger = Logger(label: "test")

    static func claim(limit: Int) -> Claim {
        Claim(
            worker: "w", kinds: [add.name], limit: limit, now: epoch, leaseExpiry: epoch.addingTimeInterval(3_600))
    }

    /// A store over a new schema with run `open`: jobs `a` and `b` appended, both claimed, and
    /// `a`'s outcome recorded (so that the store has seen the run open); returns it and `b`.
    static func openWithBRunning(_ file: TemporaryStore) async throws -> (PostgresJobStore, ClaimedJob) {
        _ = try await file.open()  // makes the schema
        let store = try file.postgresStore(tries: .init())
        let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
        try await queue.open(runID: "open", limit: 10)
        var graph = DurableGraph()
        try graph.add("a", add, input: [1])
        try graph.add("b", add, input: [2])
        try await queue.append(graph, to: "open")
        let claimed = try await store.record([], thenClaim: claim(limit: 2), now: epoch).claimed
        #expect(Set(claimed.map(\.key.jobID)) == ["a", "b"])
        let a = try #require(claimed.first { $0.key.jobID == "a" })
        let recorded = try await store.record(
            [AttemptOutcome(job: a, outcome: .succeeded(Data("1".utf8)))], thenClaim: nil, now: epoch
        ).recorded
        #expect(recorded == [RecordedOutcome(recorded: true, runEnded: nil)])
        return (store, try #require(claimed.first { $0.key.jobID == "b" }))
    }

    /// Runs `statements` in a transaction of a connection of its own, and returns once they
    /// ran, with the task that ends the transaction with `end` (`COMMIT`, `ROLLBACK`) once
    /// `release` is signalled.
    static func holding(
        _ file: TemporaryStore, _ statements: [PostgresQuery], ending end: PostgresQuery, until release: AsyncEvent
    ) async throws -> Task<Void, any Error> {
        let held = AsyncEvent()
        let transaction = Task {
            try await file.client!.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                for statement in statements { try await connection.query(statement, logger: logger) }
                held.signal()
                try await release.wait()
                try await connection.query(end, logger: logger)
            }
        }
        try await withTimeout(.seconds(30)) { try await held.wait() }
        return transaction
    }

    /// The coordinator appends while an append of its run holds the run's row (here a
    /// transaction that updates it, as an append does, and stays open): an outcome of the open
    /// run is recorded meanwhile, where it waited for the append's commit before.
    @Test func anOutcomeOfAnOpenRunDoesNotWaitForItsAppends() async throws {
        try await withTemporaryStore(.postgres) { file in
            let (store, b) = try await Self.openWithBRunning(file)
            let release = AsyncEvent()
            defer { release.signal() }
            let appending = try await Self.holding(
                file, ["UPDATE \(unescaped: file.schema).runs SET next_position = next_position WHERE id = 'open'"],
                ending: "ROLLBACK", until: release)
            let recorded = try await withTimeout(.seconds(30)) {
                try await store.record(
                    [AttemptOutcome(job: b, outcome: .succeeded(Data("2".utf8)))], thenClaim: nil, now: Self.epoch
                ).recorded
            }
            #expect(recorded == [RecordedOutcome(recorded: true, runEnded: nil)])
            #expect(try await file.jobIDs(in: "succeeded") == ["a", "b"])
            release.signal()
            try await appending.value
        }
    }

    /// A close comes while the last outcome of the open run is being recorded under the shared
    /// lock (here a transaction that takes it and marks `b` succeeded, and stays open): the
    /// close waits for it, sees every job ended, and ends the run. Without the wait, the close
    /// saw `b` running, and the outcome, which found the run open, did not end it: the run
    /// stayed running with nothing left to end it.
    @Test func aCloseWaitsForTheOutcomesOfItsOpenRunAndEndsIt() async throws {
        try await withTemporaryStore(.postgres) { file in
            let (store, _) = try await Self.openWithBRunning(file)
            let release = AsyncEvent()
            defer { release.signal() }
            let recording = try await Self.holding(
                file,
                [
                    "SELECT open_for_jobs FROM \(unescaped: file.schema).runs WHERE id = 'open' FOR KEY SHARE",
                    "UPDATE \(unescaped: file.schema).jobs SET state = 'succeeded', output = '2' WHERE id = 'b'",
                ], ending: "COMMIT", until: release)
            let closeReturned = Locked(false)
            let closing = Task {
                defer { closeReturned.withLock { $0 = true } }
                return try await store.close(runID: "open", now: Self.epoch)
            }
            // The close waits for the outcome's lock (or, wrongly, has returned already).
            try await waitUntil("the close waits for the run's lock, or has returned") {
                try await Self.waitsForARowLock(file) || closeReturned.withLock { $0 }
            }
            #expect(!closeReturned.withLock { $0 })
            release.signal()
            try await recording.value
            #expect(try await closing.value == .succeeded)
        }
    }

    /// The store saw the run open, and another process closed it since: the next outcome finds
    /// it closed under the shared lock, takes the exclusive one, and ends the run with the last
    /// job.
    @Test func anOutcomeAfterTheRunWasClosedElsewhereEndsIt() async throws {
        try await withTemporaryStore(.postgres) { file in
            let (store, b) = try await Self.openWithBRunning(file)
            let other = try file.postgresStore(tries: .init())
            #expect(try await other.close(runID: "open", now: Self.epoch) == nil)
            let recorded = try await store.record(
                [AttemptOutcome(job: b, outcome: .succeeded(Data("2".utf8)))], thenClaim: nil, now: Self.epoch
            ).recorded
            #expect(recorded == [RecordedOutcome(recorded: true, runEnded: .succeeded)])
            #expect(try await store.run("open")?.state == .succeeded)
        }
    }

    /// Whether a session of the server waits for a lock in a statement on this schema's runs.
    static func waitsForARowLock(_ file: TemporaryStore) async throws -> Bool {
        let pattern = "%\(file.schema).runs%"
        var waiting = 0
        for try await count in try await file.client!.query(
            "SELECT COUNT(*)::INTEGER FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE \(pattern)"
        ).decode(Int.self) {
            waiting = count
        }
        return waiting > 0
    }
}
