import Foundation
import GRDB
import Orchestra

// Leases that end, for jobs that run at least once (ready again) and at most once (uncertain):
// expired, given back, and uncertain jobs sent again on demand.
extension SQLiteJobStore: LeaseEndingNotices {
    /// Ends the leases that expired at `now`, inside the caller's transaction (a claim's): a job
    /// that runs at most once is uncertain (its dependents and run follow), any other is ready
    /// again at its lease's expiry.
    static func expireLeases(now: Int64, _ db: Database) throws {
        let expired = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT run_id, id, lease_owner, attempts FROM jobs
                    WHERE state = 'running' AND lease_expiry <= ? AND at_most_once
                    """), arguments: [now])
        for row in expired {
            try makeUncertain(
                JobKey(runID: row[0], jobID: row[1]), error: AtMostOnce.leaseLost(worker: row[2], attempt: row[3]),
                db)
        }
        try endRunsIfDone(Set(expired.map { $0[0] as String }), now: now, db)
        try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = 'ready', run_at = lease_expiry, lease_owner = NULL, lease_expiry = NULL
                WHERE state = 'running' AND lease_expiry <= ?
                """
        ).execute(arguments: [now])
        if !expired.isEmpty { notifyOutcomesAfterCommit(db) }
    }

    /// Marks the running job `key` uncertain with `error`, then stops its run or skips its
    /// dependents as for a job that failed. The caller ends the run if it is done.
    private static func makeUncertain(_ key: JobKey, error: String, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = 'uncertain', error = ?, lease_owner = NULL, lease_expiry = NULL
                WHERE run_id = ? AND id = ? AND state = 'running'
                """
        ).execute(arguments: [error, key.runID, key.jobID])
        guard db.changesCount > 0 else { return }
        try endedUnsuccessfully(key, outcome: AtMostOnce.outcome, db)
    }

    private static func endRunsIfDone(_ runIDs: Set<String>, now: Int64, _ db: Database) throws {
        for runID in runIDs.sorted() { _ = try endRunIfDone(runID, now: now, db) }
    }

    /// Every job taken as started: see ``JobStore/releaseLeases(of:started:worker:now:)``.
    public func releaseLeases(of jobs: [JobKey], worker: String, now: Date) async throws {
        try await releaseLeases(of: jobs, started: Set(jobs), worker: worker, now: now)
    }

    public func releaseLeases(of jobs: [JobKey], started: Set<JobKey>, worker: String, now: Date) async throws {
        guard !jobs.isEmpty else { return }
        let now = Millis.of(now)
        try await write { db in
            let held = try db.cachedStatement(
                sql: """
                    SELECT at_most_once, attempts FROM jobs
                    WHERE run_id = ? AND id = ? AND state = 'running' AND lease_owner = ?
                    """)
            let ready = try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'ready', run_at = ?, lease_owner = NULL, lease_expiry = NULL
                    WHERE run_id = ? AND id = ?
                    """)
            var ended: Set<String> = []
            for job in jobs {
                // A job this worker no longer holds (its outcome recorded, its lease lost) is left alone.
                guard let row = try Row.fetchOne(held, arguments: [job.runID, job.jobID, worker]) else { continue }
                if row[0] as Bool && started.contains(job) {
                    try Self.makeUncertain(
                        job, error: AtMostOnce.givenBack(worker: worker, attempt: row[1]), db)
                    ended.insert(job.runID)
                } else {
                    try ready.execute(arguments: [now, job.runID, job.jobID])
                }
            }
            try Self.endRunsIfDone(ended, now: now, db)
            if !ended.isEmpty { Self.notifyOutcomesAfterCommit(db) }
        }
    }

    public func resendUncertain(runID: String, now: Date) async throws -> Int {
        let now = Millis.of(now)
        let path = self.path
        return try await write { db in
            let state = try Self.runState(of: runID, path: path, db)
            guard state != DurableRunState.cancelled.rawValue else { return 0 }
            let uncertain = try String.fetchAll(
                db.cachedStatement(sql: "SELECT id FROM jobs WHERE run_id = ? AND state = 'uncertain'"),
                arguments: [runID])
            guard !uncertain.isEmpty else { return 0 }
            try db.cachedStatement(
                sql:
                    "UPDATE jobs SET state = 'ready', run_at = ?, error = NULL WHERE run_id = ? AND state = 'uncertain'"
            ).execute(arguments: [now, runID])
            try Self.unskipDependents(of: uncertain, in: runID, db)
            if state == DurableRunState.failed.rawValue {
                // Ended, so closed if it was opened: open again, for its coordinator to go on with.
                try db.cachedStatement(
                    sql: "UPDATE runs SET state = 'running', ended = NULL, open_for_jobs = opened WHERE id = ?"
                ).execute(arguments: [runID])
            }
            return uncertain.count
        }
    }

    /// Blocks again the skipped jobs that depend on `ids` (sent again), directly or not, whose
    /// dependencies have not ended unsuccessfully: each waits on those not yet succeeded.
    /// Iterative: a job skipped for two reasons is looked at again when its second comes back.
    private static func unskipDependents(of ids: [String], in runID: String, _ db: Database) throws {
        let skippedDependents = try db.cachedStatement(
            sql: """
                SELECT jobs.id FROM dependencies JOIN jobs ON jobs.run_id = dependencies.run_id
                    AND jobs.id = dependencies.job_id
                WHERE dependencies.run_id = ? AND dependencies.depends_on = ? AND jobs.state = 'skipped'
                """)
        let dependencyStates = try db.cachedStatement(
            sql: """
                SELECT jobs.state FROM dependencies INDEXED BY dependencies_of_job
                JOIN jobs ON jobs.run_id = dependencies.run_id AND jobs.id = dependencies.depends_on
                WHERE dependencies.run_id = ? AND dependencies.job_id = ?
                """)
        let block = try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = 'blocked', waiting_on = ?, error = NULL
                WHERE run_id = ? AND id = ? AND state = 'skipped'
                """)
        var pending = ids
        while let next = pending.popLast() {
            for id in try String.fetchAll(skippedDependents, arguments: [runID, next]) {
                let states = try String.fetchAll(dependencyStates, arguments: [runID, id])
                let unsuccessful: Set<String> = ["failed", "skipped", "cancelled", "uncertain"]
                guard !states.contains(where: unsuccessful.contains) else { continue }
                try block.execute(arguments: [states.count { $0 != "succeeded" }, runID, id])
                pending.append(id)
            }
        }
    }

    // MARK: - Outcomes ended by a lease

    /// The callbacks of ``listenForLeaseEndings(_:)``, by the connection of their store: a lease
    /// that ends a job (uncertain) is recorded inside a claim, with no worker to tell.
    private static let outcomeListeners = Locked([ObjectIdentifier: [UUID: @Sendable () -> Void]]())

    /// Calls the outcome listeners of `db`'s store once the caller's transaction commits.
    private static func notifyOutcomesAfterCommit(_ db: Database) {
        let connection = ObjectIdentifier(db)
        db.afterNextTransaction { _ in
            for listener in outcomeListeners.withLock({ Array(($0[connection] ?? [:]).values) }) { listener() }
        }
    }

    /// See ``LeaseEndingNotices``.
    package func listenForLeaseEndings(_ onOutcome: @escaping @Sendable () -> Void) async throws {
        let connection = try await read { db in ObjectIdentifier(db) }
        let token = UUID()
        Self.outcomeListeners.withLock { $0[connection, default: [:]][token] = onOutcome }
        defer {
            Self.outcomeListeners.withLock { listeners in
                listeners[connection]?[token] = nil
                if listeners[connection]?.isEmpty == true { listeners[connection] = nil }
            }
        }
        // Once now, as listening begins: a lease that ended before is looked for then.
        onOutcome()
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            for await _ in stream {}
        } onCancel: {
            continuation.finish()
        }
    }
}
