import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// Outcomes that release work, recorded with a claim: the dependent made ready is claimed in
/// the outcomes' transaction when the claim lock is free at once (one transaction instead of
/// two for each link of a chain), never by waiting for that lock while the outcomes hold their
/// runs' locks, and never twice when the transaction is tried again.
@Suite(
    "PostgresJobStore: a claim in the outcomes' transaction",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresClaimWithOutcomesTests {
    static let add = JobKind<[Int], Int>("add")
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    static func claim(limit: Int) -> Claim {
        Claim(
            worker: "w", kinds: [add.name], limit: limit, now: epoch, leaseExpiry: epoch.addingTimeInterval(3_600))
    }

    /// Submits `a`, `b` after `a`, and `c` (independent), then claims `a` alone (the longest
    /// path goes first) and returns it.
    static func submitAndClaimA(_ file: TemporaryStore) async throws -> ClaimedJob {
        let store = try await file.open()
        var graph = DurableGraph()
        try graph.add("a", add, input: [1])
        try graph.add("b", add, input: [2], after: ["a"])
        try graph.add("c", add, input: [3])
        let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
        #expect(try await queue.submit(graph, runID: "run", limit: 100))
        let claimed = try await store.record([], thenClaim: claim(limit: 1), now: epoch).claimed
        #expect(claimed.map(\.key.jobID) == ["a"])
        return try #require(claimed.first)
    }

    @Test func anOutcomeThatReleasesADependentClaimsItInItsOwnTransaction() async throws {
        try await withTemporaryStore(.postgres) { file in
            let a = try await Self.submitAndClaimA(file)
            let transactions = Locked(0)
            let store = try file.postgresStore(tries: .init(afterTry: { _ in transactions.withLock { $0 += 1 } }))
            let outcome = AttemptOutcome(job: a, outcome: .succeeded(Data("1".utf8)))
            let (recorded, claimed) = try await store.record(
                [outcome], thenClaim: Self.claim(limit: 1), now: Self.epoch)
            #expect(recorded.map(\.recorded) == [true])
            // `b` (its path is the longer) with `a`'s output.
            #expect(claimed.map(\.key.jobID) == ["b"])
            #expect(claimed.first?.dependencyOutputs == ["a": Data("1".utf8)])
            // One transaction: outcome and claim (two before).
            #expect(transactions.withLock { $0 } == 1)
            #expect(try await file.jobIDs(in: "running") == ["b"])

            // An outcome that releases nothing claims in a transaction of its own, as before.
            transactions.withLock { $0 = 0 }
            let b = try #require(claimed.first)
            let next = try await store.record(
                [AttemptOutcome(job: b, outcome: .succeeded(Data("2".utf8)))], thenClaim: Self.claim(limit: 1),
                now: Self.epoch)
            #expect(next.claimed.map(\.key.jobID) == ["c"])
            #expect(transactions.withLock { $0 } == 2)
        }
    }

    /// Another transaction holds the claim lock (a long claim): the outcome is committed
    /// without waiting for it, and the claim waits in a transaction of its own, holding no
    /// run's lock.
    @Test func anOutcomeDoesNotWaitForTheClaimLockWhileItHoldsItsRunsLock() async throws {
        try await withTemporaryStore(.postgres) { file in
            let a = try await Self.submitAndClaimA(file)
            let store = try file.postgresStore(tries: .init())
            let lockKey = file.schema + ".claim"
            let held = AsyncEvent()
            let release = AsyncEvent()
            let holder = Task {
                try await file.client!.withConnection { connection in
                    try await connection.query(
                        "SELECT pg_advisory_lock(hashtext(\(lockKey)))", logger: Logger(label: "test"))
                    held.signal()
                    try await release.wait()
                    try await connection.query(
                        "SELECT pg_advisory_unlock(hashtext(\(lockKey)))", logger: Logger(label: "test"))
                }
            }
            defer { release.signal() }
            // The outcome's commit notifies the workers (it released `b`): heard here.
            let notifications = Locked(0)
            let listening = AsyncEvent()
            let committed = AsyncEvent()
            let listener = Task {
                try await store.listenForWork(ignoring: "") {
                    let count = notifications.withLock { count in
                        count += 1
                        return count
                    }
                    (count == 1 ? listening : committed).signal()
                }
            }
            defer { listener.cancel() }
            try await withTimeout(.seconds(30)) { try await held.wait() }
            try await withTimeout(.seconds(30)) { try await listening.wait() }
            let outcome = AttemptOutcome(job: a, outcome: .succeeded(Data("1".utf8)))
            let recording = Task {
                try await store.record([outcome], thenClaim: Self.claim(limit: 1), now: Self.epoch)
            }
            // Committed while the lock is held: the outcome did not wait for it.
            try await withTimeout(.seconds(30)) { try await committed.wait() }
            #expect(try await file.jobIDs(in: "succeeded") == ["a"])
            // And the run is not locked: another outcome of it can be recorded meanwhile.
            var locked: [String] = []
            for try await id in try await file.client!.query(
                "SELECT id FROM \(unescaped: file.schema).runs WHERE id = 'run' FOR UPDATE NOWAIT"
            ).decode(String.self) {
                locked.append(id)
            }
            #expect(locked == ["run"])
            #expect(try await file.jobIDs(in: "ready") == ["b", "c"])
            release.signal()
            try await holder.value
            let (recorded, claimed) = try await recording.value
            #expect(recorded.map(\.recorded) == [true])
            #expect(claimed.map(\.key.jobID) == ["b"])
        }
    }

    /// The outcomes' first try commits, claiming `b` and `c` with them, and is given up (its
    /// answer came too late); the second finds the outcome recorded and nothing released, so
    /// the claim has a transaction of its own: it must return what the first try claimed
    /// rather than claim again (there is nothing else ready: it would return nothing, and `b`
    /// and `c` would run under nobody until their leases end).
    @Test func aClaimAfterOutcomesTriedAgainReturnsWhatTheirGivenUpTryClaimed() async throws {
        try await withTemporaryStore(.postgres) { file in
            let a = try await Self.submitAndClaimA(file)
            let release = AsyncEvent()
            defer { release.signal() }
            let store = try file.postgresStoreGivingUpItsFirstTry(release: release)
            let outcome = AttemptOutcome(job: a, outcome: .succeeded(Data("1".utf8)))
            let (recorded, claimed) = try await store.record(
                [outcome], thenClaim: Self.claim(limit: 2), now: Self.epoch)
            #expect(recorded.map(\.recorded) == [true])
            #expect(claimed.map(\.key.jobID).sorted() == ["b", "c"])
            #expect(claimed.allSatisfy { $0.attempt == 1 })
            #expect(try await file.jobIDs(in: "running") == ["b", "c"])
        }
    }
    /// A job that runs at most once lost its lease: the claim must make it uncertain, which
    /// takes its run's lock, so it is not made in the outcomes' transaction (which holds run
    /// locks and must not wait for another) but in one of its own.
    @Test func aClaimThatMustTakeRunLocksIsMadeInATransactionOfItsOwn() async throws {
        try await withTemporaryStore(.postgres) { file in
            let plain = try await file.open()
            var graph = DurableGraph()
            try graph.add("a", Self.add, input: [1])
            try graph.add("b", Self.add, input: [2], after: ["a"])
            try graph.add("m", Self.add, input: [3], options: DurableJobOptions(priority: 1, atMostOnce: true))
            let queue = DurableQueue(store: plain, clock: ManualClock(), wallClockStart: Self.epoch)
            #expect(try await queue.submit(graph, runID: "run", limit: 100))
            // `m` to a worker whose lease ends in a second, `a` to this one.
            let lost = Claim(
                worker: "x", kinds: [Self.add.name], limit: 1, now: Self.epoch,
                leaseExpiry: Self.epoch.addingTimeInterval(1))
            #expect(try await plain.record([], thenClaim: lost, now: Self.epoch).claimed.map(\.key.jobID) == ["m"])
            let a = try #require(
                try await plain.record([], thenClaim: Self.claim(limit: 1), now: Self.epoch).claimed.first)
            #expect(a.key.jobID == "a")

            let transactions = Locked(0)
            let store = try file.postgresStore(tries: .init(afterTry: { _ in transactions.withLock { $0 += 1 } }))
            let later = Self.epoch.addingTimeInterval(10)
            let claim = Claim(
                worker: "w", kinds: [Self.add.name], limit: 1, now: later, leaseExpiry: later.addingTimeInterval(3_600))
            let (recorded, claimed) = try await store.record(
                [AttemptOutcome(job: a, outcome: .succeeded(Data("1".utf8)))], thenClaim: claim, now: later)
            #expect(recorded.map(\.recorded) == [true])
            #expect(claimed.map(\.key.jobID) == ["b"])
            #expect(transactions.withLock { $0 } == 2)
            #expect(try await file.jobIDs(in: "uncertain") == ["m"])
        }
    }
}
