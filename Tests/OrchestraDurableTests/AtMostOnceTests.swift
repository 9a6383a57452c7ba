import Foundation
import GRDB
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// The job kind of these tests: returns its input.
private let charge = JobKind<String, String>("charge")

@Suite("At most once: uncertain jobs, in every store", .timeLimit(.minutes(1)), .takesTurns)
struct AtMostOnceTests {
    /// How a worker loses job `a`'s attempt 1.
    enum Loss: String, Sendable {
        /// Its worker dies: the lease expires.
        case leaseExpired
        /// Its worker stops gracefully while the handler runs: given back after it started.
        case givenBackAfterStart
        /// Its worker stops gracefully while the handler waits for a slot (`markWaiting`).
        case givenBackWhileWaiting
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        var loss: Loss
        var atMostOnce: Bool
        /// Whether `a` ends uncertain (not run again) rather than being run again.
        var uncertain: Bool
        var testDescription: String { "\(loss.rawValue), atMostOnce: \(atMostOnce)" }
    }

    static let scenarios: [Scenario] = [
        Scenario(loss: .leaseExpired, atMostOnce: true, uncertain: true),
        Scenario(loss: .leaseExpired, atMostOnce: false, uncertain: false),
        Scenario(loss: .givenBackAfterStart, atMostOnce: true, uncertain: true),
        Scenario(loss: .givenBackAfterStart, atMostOnce: false, uncertain: false),
        Scenario(loss: .givenBackWhileWaiting, atMostOnce: true, uncertain: false),
    ]

    /// `a` (with the scenario's option) and `b` after it.
    static func graph(atMostOnce: Bool) throws -> DurableGraph {
        var graph = DurableGraph()
        let a = try graph.add("a", charge, input: "paid", options: DurableJobOptions(atMostOnce: atMostOnce))
        try graph.add("b", charge, input: "mailed", after: [a.id])
        return graph
    }

    /// The scenario's loss of `a`'s first attempt, with the store's clock at `epoch`; a new
    /// worker may take it from `epoch + 10 s`.
    static func lose(_ loss: Loss, runID: String, store: any JobStore) async throws {
        switch loss {
        case .leaseExpired:
            // A worker that claims `a` and dies: its lease runs to t+10 and is never renewed.
            let claimed = try await store.record(
                [],
                thenClaim: Claim(
                    worker: "dead", kinds: ["charge"], limit: 8, now: epoch, leaseExpiry: epoch.addingTimeInterval(10)),
                now: epoch
            ).claimed
            #expect(claimed.map(\.key.jobID) == ["a"])
        case .givenBackAfterStart, .givenBackWhileWaiting:
            let clock = ManualClock()
            let queue = DurableQueue(
                store: store, worker: "leaving", leaseDuration: .seconds(60), clock: clock, wallClockStart: epoch)
            let inHandler = Locked(false)
            queue.register(charge) { input, context in
                if loss == .givenBackWhileWaiting { context.markWaiting() }
                inHandler.withLock { $0 = true }
                await untilCancelled()
                throw CancellationError()
            }
            let stop = DurableStopSignal()
            let working = Task { try await queue.work(limit: 4, until: stop, gracePeriod: .seconds(10)) }
            try await waitUntil("a's handler runs") { inHandler.withLock { $0 } }
            stop.request()
            try await waitUntil("the grace period is timed") {
                clock.pendingSleepers.contains(ManualClock.Instant(offset: .seconds(10)))
            }
            clock.advance(by: .seconds(10))
            try await withHangGuard(.seconds(20)) { try await working.value }
        }
    }

    /// A live worker from `epoch + 20 s`, recording the attempts its handler runs.
    static func liveQueue(_ store: any JobStore, calls: Locked<[String]>) -> DurableQueue {
        let queue = DurableQueue(
            store: store, worker: "live", clock: ManualClock(), wallClockStart: epoch.addingTimeInterval(20))
        queue.register(charge) { input, context in
            calls.withLock { $0.append("\(context.jobID)#\(context.attempt)") }
            return input
        }
        return queue
    }

    @Test(arguments: StoreKind.available, scenarios)
    func aLostAttemptIsRunAgainOrEndsUncertain(_ kind: StoreKind, _ scenario: Scenario) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let runID = "lost"
            let submitter = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            try await submitter.submit(try Self.graph(atMostOnce: scenario.atMostOnce), runID: runID)
            try await Self.lose(scenario.loss, runID: runID, store: store)
            // A lease that expires is seen by the next claim; a give-back settles the job at once.
            let lost: [DurableJobState] =
                scenario.loss == .leaseExpired
                ? [.running, .blocked] : scenario.uncertain ? [.uncertain, .skipped] : [.ready, .blocked]
            #expect(try await submitter.jobs(of: runID).map(\.state) == lost)

            let calls = Locked([String]())
            let live = Self.liveQueue(store, calls: calls)
            try await withHangGuard(.seconds(20)) { try await live.drain() }
            let jobs = try await live.jobs(of: runID)
            guard scenario.uncertain else {
                // Run again by the live worker, its attempt counted; the run goes on.
                #expect(calls.withLock { $0 } == ["a#2", "b#1"])
                #expect(jobs.map(\.state) == [.succeeded, .succeeded])
                #expect(try await live.run(runID).state == .succeeded)
                return
            }
            // Not run again: "may have been sent". Its dependent is skipped, the run failed.
            #expect(calls.withLock { $0 }.isEmpty, "an at-most-once job was sent again")
            #expect(jobs.map(\.state) == [.uncertain, .skipped])
            #expect(jobs.first?.attempts == 1)
            let error = try #require(jobs.first?.error)
            #expect(
                error.hasPrefix("may have been sent: worker '\(scenario.loss == .leaseExpired ? "dead" : "leaving")'"))
            #expect(error.contains("attempt 1"))
            #expect(jobs.last?.error == "not run: job 'a' \(AtMostOnce.outcome)")
            #expect(try await live.run(runID).state == .failed)
            if kind == .postgres, let postgres = store as? PostgresJobStore {
                let summary = try #require(try await postgres.runSummaries(id: runID).first)
                #expect(summary.jobs == [.uncertain: 1, .skipped: 1])
            }

            // Sent again on demand: a runs (attempt 2), b waits for it again, the run succeeds.
            #expect(try await live.resendUncertain(runID: runID) == 1)
            #expect(try await live.run(runID).state == .running)
            #expect(try await live.jobs(of: runID).map(\.state) == [.ready, .blocked])
            try await withHangGuard(.seconds(20)) { try await live.drain() }
            #expect(calls.withLock { $0 } == ["a#2", "b#1"])
            #expect(try await live.jobs(of: runID).map(\.state) == [.succeeded, .succeeded])
            #expect(try await live.run(runID).state == .succeeded)
            #expect(try await live.resendUncertain(runID: runID) == 0, "nothing uncertain is left")
        }
    }

    @Test(arguments: StoreKind.available)
    func aSkippedJobWithAnotherFailedDependencyStaysSkippedWhenTheUncertainOneIsResent(
        _ kind: StoreKind
    )
        async throws
    {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            var graph = DurableGraph()
            let a = try graph.add("a", charge, input: "paid", options: DurableJobOptions(atMostOnce: true))
            let broken = try graph.add("broken", charge, input: "fails")
            try graph.add("both", charge, input: "x", after: [a.id, broken.id])
            try graph.add("after-a", charge, input: "y", after: [a.id])
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            try await queue.submit(graph, runID: "mixed")
            // a is lost by a dead worker; broken fails for good.
            let claimed = try await store.record(
                [],
                thenClaim: Claim(
                    worker: "dead", kinds: ["charge"], limit: 2, now: epoch, leaseExpiry: epoch.addingTimeInterval(10)),
                now: epoch
            ).claimed
            #expect(Set(claimed.map(\.key.jobID)) == ["a", "broken"])
            let failing = try #require(claimed.first { $0.key.jobID == "broken" })
            _ = try await store.record(
                [AttemptOutcome(job: failing, outcome: .failed("refused", retryAt: nil))], thenClaim: nil, now: epoch)
            let calls = Locked([String]())
            let live = Self.liveQueue(store, calls: calls)
            try await withHangGuard(.seconds(20)) { try await live.drain() }
            #expect(try await live.jobs(of: "mixed").map(\.state) == [.uncertain, .failed, .skipped, .skipped])

            #expect(try await live.resendUncertain(runID: "mixed") == 1)
            #expect(try await live.jobs(of: "mixed").map(\.state) == [.ready, .failed, .skipped, .blocked])
            try await withHangGuard(.seconds(20)) { try await live.drain() }
            #expect(calls.withLock { $0 } == ["a#2", "after-a#1"])
            #expect(try await live.run("mixed").state == .failed)
        }
    }

    @Test(arguments: StoreKind.available)
    func aCoordinatorWaitingForAnOutcomeLearnsThatALostLeaseMadeItUncertain(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let submitter = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            try await submitter.open(runID: "open")
            var graph = DurableGraph()
            try graph.add("a", charge, input: "paid", options: DurableJobOptions(atMostOnce: true))
            try await submitter.append(graph, to: "open")
            let queue = DurableQueue(
                store: store, worker: "live", clock: ManualClock(), wallClockStart: epoch.addingTimeInterval(20))
            queue.register(charge) { input, _ in input }
            _ = try await store.record(
                [],
                thenClaim: Claim(
                    worker: "dead", kinds: ["charge"], limit: 1, now: epoch, leaseExpiry: epoch.addingTimeInterval(10)),
                now: epoch)
            let record = try await withHangGuard(.seconds(20)) {
                try await queue.withOutcomes(of: "open") { outcomes in
                    async let waited = outcomes.wait(for: "a")
                    try await waitUntil("the coordinator waits for a") { outcomes.awaited == ["a"] }
                    // Then a worker claims: a's lease expired, so a is uncertain, no worker's outcome.
                    let stop = DurableStopSignal()
                    let working = Task { try await queue.work(limit: 1, until: stop) }
                    let record = try await waited
                    stop.request()
                    try await working.value
                    return record
                }
            }
            #expect(record.state == .uncertain)
            #expect(record.error?.hasPrefix("may have been sent") == true)

            // Its coordinator closes the run, which fails; the next one goes on with it.
            #expect(try await submitter.close(runID: "open") == .failed)
            #expect(try await queue.resendUncertain(runID: "open") == 1)
            #expect(try await submitter.append(graph, to: "open") == 0, "the run takes jobs again")
            #expect(try await submitter.close(runID: "open") == nil)
            try await withHangGuard(.seconds(20)) { try await queue.drain() }
            #expect(try await queue.run("open").state == .succeeded)
        }
    }

    @Test func aGiveBackSaysWhichAttemptsStartedAndStopsTheOthersFromStarting() {
        var state = AttemptStartsState()
        let (claimed, waiting, started) = (
            JobKey(runID: "r", jobID: "claimed"), JobKey(runID: "r", jobID: "waiting"),
            JobKey(runID: "r", jobID: "started")
        )
        for key in [claimed, waiting, started] { state.claimed(key, attempt: 1) }
        var marks = [
            state.mark(waiting, attempt: 1, started: true), state.mark(waiting, attempt: 1, started: false),
            state.mark(started, attempt: 1, started: true),
        ]
        #expect(marks == [true, true, true])
        let unknown = JobKey(runID: "r", jobID: "not-from-this-queue")
        let givenBack = state.giveBack([claimed, waiting, started, unknown])
        #expect(givenBack == [started, unknown])
        // Given back before they started: they must not start now.
        marks = [state.mark(claimed, attempt: 1, started: true), state.mark(waiting, attempt: 1, started: true)]
        #expect(marks == [false, false])
        // Another attempt of the job (claimed again later) is not held back.
        state.claimed(claimed, attempt: 2)
        let again = state.mark(claimed, attempt: 2, started: true)
        #expect(again)
        state.ended(claimed, attempt: 2)
        let untracked = state.giveBack([claimed])
        #expect(untracked == [claimed], "an attempt not tracked counts as started")
    }

    @Test(arguments: StoreKind.available)
    func aStoreOfTheSchemaBeforeAtMostOnceOpensMigratesAndRunsItsJobsAtLeastOnce(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let input = Data("\"paid\"".utf8)
            // Schema 2: run "old" with job "a" running under a lease that expired at t+10.
            let expiry = Millis.of(epoch.addingTimeInterval(10))
            func rows(prefix: String, no: String, input: String) -> [String] {
                [
                    """
                    INSERT INTO \(prefix)runs (id, state, job_limit, fail_fast, fingerprint, created, open_for_jobs,
                        next_position)
                    VALUES ('old', 'running', 8, \(no), 'f', 0, \(no), 1)
                    """,
                    """
                    INSERT INTO \(prefix)jobs (run_id, id, position, kind, input, state, waiting_on, priority,
                        critical_path, max_attempts, initial_delay_ns, multiplier, max_delay_ns, attempts, run_at,
                        lease_owner, lease_expiry)
                    VALUES ('old', 'a', 0, 'charge', \(input), 'running', 0, 0, 1, 1, 0, 2, 0, 1, 0, 'dead', \(expiry))
                    """,
                ]
            }
            switch kind {
            case .sqlite:
                let database = try DatabaseQueue(path: file.path)
                try SQLiteJobStore.migrator.migrate(database, upTo: "orchestra-2")
                let sql = rows(prefix: "", no: "0", input: "?")
                try await database.write { db in
                    try db.execute(sql: sql[0])
                    try db.execute(sql: sql[1], arguments: [input])
                    #expect(
                        try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'schema'") == "2")
                }
                try database.close()
            case .postgres:
                let client = try #require(file.client)
                let old = try PostgresJobStore(client: client, schema: file.schema, location: "test", pollInterval: nil)
                try await client.query("CREATE SCHEMA \(unescaped: file.schema)")
                for statement in old.migrations.prefix(2).joined() {
                    try await client.query(PostgresQuery(unsafeSQL: statement))
                }
                let hex = input.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
                for statement in rows(prefix: file.schema + ".", no: "false", input: "decode('\(hex)', 'hex')") {
                    try await client.query(PostgresQuery(unsafeSQL: statement))
                }
            }
            let store = try await file.open()
            let calls = Locked([String]())
            let live = Self.liveQueue(store, calls: calls)
            #expect(try await live.run("old").state == .running)
            try await withHangGuard(.seconds(20)) { try await live.drain() }
            // Stored before the option: at least once, as it was; run again after its lease.
            #expect(calls.withLock { $0 } == ["a#2"])
            #expect(try await live.run("old").state == .succeeded)
        }
    }
}
