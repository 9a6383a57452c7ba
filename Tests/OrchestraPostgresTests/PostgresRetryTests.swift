import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// A try of a claim or of outcomes that committed but was given up (its answer came after the
/// operation's time, as on a machine too busy to hear it): the next try must not do the work
/// again. The store's hooks make the first try commit, then hold it until the timer that gives
/// it up has fired; no real time passes.
@Suite(
    "PostgresJobStore: a try given up after it committed",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresRetryTests {
    static let add = JobKind<[Int], Int>("add")
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    static func submitIndependentJobs(_ count: Int, to file: TemporaryStore) async throws {
        let store = try await file.open()
        var graph = DurableGraph()
        for index in 0..<count { try graph.add("j\(index)", add, input: [index]) }
        let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
        #expect(try await queue.submit(graph, runID: "run", limit: 100))
    }

    @Test func aClaimTriedAgainReturnsWhatTheTryGivenUpClaimed() async throws {
        try await withTemporaryStore(.postgres) { file in
            try await Self.submitIndependentJobs(10, to: file)
            let release = AsyncEvent()
            defer { release.signal() }
            let store = try file.postgresStoreGivingUpItsFirstTry(release: release)
            let claim = Claim(
                worker: "w", kinds: [Self.add.name], limit: 4, now: Self.epoch,
                leaseExpiry: Self.epoch.addingTimeInterval(3_600))
            let claimed = try await store.record([], thenClaim: claim, now: Self.epoch).claimed
            // Without the claim's token the second try claimed 4 more: 8 running, 4 of them
            // run by nobody until their leases end.
            #expect(claimed.count == 4)
            #expect(try await file.jobIDs(in: "running") == claimed.map(\.key.jobID).sorted())
            #expect(claimed.allSatisfy { $0.attempt == 1 })
            #expect(try await file.jobIDs(in: "ready").count == 6)
        }
    }

    /// The server ends the connection a try runs on while a query on it never answers (as
    /// PostgresNIO left one after an immediate restart): the try is given up when the
    /// connection closes, not at its timer (which here never fires), and the next one runs.
    /// The store then holds no try on any connection, and none for the closed one.
    @Test func aTryWhoseConnectionClosesIsGivenUpAtOnceAndTriedAgain() async throws {
        try await withTemporaryStore(.postgres) { file in
            _ = try await file.open()
            let stuck = AsyncEvent()
            defer { stuck.signal() }
            let store = try file.postgresStore(tries: .init(timer: { _, _ in try? await stuck.wait() }))
            let client = try #require(file.client)
            let closed = Locked<PostgresConnection.ID?>(nil)
            let tries = try await withHangGuard {
                try await store.transaction { connection, current in
                    guard current.number == 1 else { return current.number }
                    closed.withLock { $0 = connection.id }
                    let backend = try await connection.query("SELECT pg_backend_pid()", logger: store.logger)
                        .decode(Int32.self).onlyRow()
                    try await client.query("SELECT pg_terminate_backend(\(backend))")
                    await Task.detached { try? await stuck.wait() }.value
                    return current.number
                }
            }
            #expect(tries == 2)
            let id = try #require(closed.withLock { $0 })
            let watched = store.connections.withLock { $0 }
            #expect(watched[id] == nil)
            let triesHeld = watched.values.map(\.tries.count).reduce(0, +)
            #expect(triesHeld == 0)
        }
    }

    @Test func outcomesTriedAgainAreRecordedNotRefused() async throws {
        try await withTemporaryStore(.postgres) { file in
            try await Self.submitIndependentJobs(3, to: file)
            let plain = try await file.open()
            let claim = Claim(
                worker: "w", kinds: [Self.add.name], limit: 3, now: Self.epoch,
                leaseExpiry: Self.epoch.addingTimeInterval(3_600))
            let claimed = try await plain.record([], thenClaim: claim, now: Self.epoch).claimed
            #expect(claimed.count == 3)

            let release = AsyncEvent()
            defer { release.signal() }
            let store = try file.postgresStoreGivingUpItsFirstTry(release: release)
            let outcomes = [
                AttemptOutcome(job: claimed[0], outcome: .succeeded(Data("1".utf8))),
                AttemptOutcome(job: claimed[1], outcome: .failed("boom", retryAt: nil)),
            ]
            let recorded = try await store.record(outcomes, thenClaim: nil, now: Self.epoch).recorded
            // Without the look at what the given-up try recorded: [false, false].
            #expect(recorded.map(\.recorded) == [true, true])
            #expect(try await file.jobIDs(in: "succeeded") == [claimed[0].key.jobID])
            #expect(try await file.jobIDs(in: "failed") == [claimed[1].key.jobID])
            // Another worker's outcome for an attempt that is not current is still refused.
            let stale = AttemptOutcome(job: claimed[0], outcome: .succeeded(Data("2".utf8)))
            let again = try await plain.record([stale], thenClaim: nil, now: Self.epoch)
            #expect(again.recorded.map(\.recorded) == [false])
        }
    }
}
