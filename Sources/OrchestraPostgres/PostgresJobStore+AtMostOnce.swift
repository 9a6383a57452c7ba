import Foundation
import OrchestraDurable
import PostgresNIO

// Leases that end, for jobs that run at least once (ready again) and at most once (uncertain):
// expired, given back, and uncertain jobs sent again on demand.
extension PostgresJobStore {
    /// Makes uncertain, inside the caller's transaction (a claim's), the jobs that run at most
    /// once whose lease expired at `now`: their dependents are skipped (or their run stopped),
    /// their runs ended if done, and the processes waiting for outcomes told. The claim makes
    /// the other expired jobs ready again.
    func expireAtMostOnceLeases(now: Int64, _ connection: PostgresConnection) async throws {
        var expired: [(key: JobKey, owner: String?, attempt: Int)] = []
        for try await (runID, id, owner, attempts) in try await connection.query(
            """
            SELECT run_id, id, lease_owner, attempts FROM \(unescaped: table("jobs"))
            WHERE state = 'running' AND lease_expiry <= \(now) AND at_most_once
            """, logger: logger
        ).decode((String, String, String?, Int).self) {
            expired.append((JobKey(runID: runID, jobID: id), owner, attempts))
        }
        guard !expired.isEmpty else { return }
        let runs = try await lockRuns(Set(expired.map(\.key.runID)), connection)
        var ended = false
        for job in expired {
            // Still running under that lease: a worker's outcome may have been recorded meanwhile.
            ended =
                try await makeUncertain(
                    job.key, error: AtMostOnce.leaseLost(worker: job.owner, attempt: job.attempt), expiredBy: now,
                    connection) || ended
        }
        for runID in runs { _ = try await endRunIfDone(runID, now: now, connection) }
        if ended { try await notify(outcome: .any, connection) }
    }

    /// Locks the rows of `runIDs` in id order, as recording outcomes does (so that the two never
    /// deadlock), and returns the ids in that order.
    private func lockRuns(_ runIDs: Set<String>, _ connection: PostgresConnection) async throws -> [String] {
        let sorted = runIDs.sorted()
        try await connection.query(
            "SELECT id FROM \(unescaped: table("runs")) WHERE id = ANY(\(sorted)) ORDER BY id FOR UPDATE",
            logger: logger)
        return sorted
    }

    /// Marks the running job `key` uncertain with `error` (if it is still under `owner`'s lease,
    /// or under a lease expired by `expiredBy`, when given), then stops its run or skips its
    /// dependents as for a job that failed. Returns whether it did. The caller holds the run's
    /// lock and ends the run if it is done.
    private func makeUncertain(
        _ key: JobKey, error: String, owner: String? = nil, expiredBy: Int64? = nil,
        _ connection: PostgresConnection
    ) async throws -> Bool {
        let marked =
            try await connection.query(
                """
                UPDATE \(unescaped: table("jobs")) SET state = 'uncertain', error = \(error), lease_owner = NULL,
                    lease_expiry = NULL
                WHERE run_id = \(key.runID) AND id = \(key.jobID) AND state = 'running'
                    AND (\(owner)::TEXT IS NULL OR lease_owner = \(owner))
                    AND (\(expiredBy)::BIGINT IS NULL OR lease_expiry <= \(expiredBy))
                RETURNING id
                """, logger: logger
            ).decode(String.self).onlyRow() != nil
        if marked { try await failedForGood(key, outcome: AtMostOnce.outcome, connection) }
        return marked
    }

    /// Gives the leases back as the protocol says, every job taken as started, and wakes the
    /// idle workers so that one claims the jobs at once.
    public func releaseLeases(of jobs: [JobKey], worker: String, now: Date) async throws {
        try await releaseLeases(of: jobs, started: Set(jobs), worker: worker, now: now)
    }

    /// Gives the leases back as the protocol says, and wakes the idle workers so that one
    /// claims the jobs at once.
    public func releaseLeases(of jobs: [JobKey], started: Set<JobKey>, worker: String, now: Date) async throws {
        guard !jobs.isEmpty else { return }
        let now = Millis.of(now)
        try await transaction { [self] connection in
            let runs = try await lockRuns(Set(jobs.map(\.runID)), connection)
            var ended = false
            let startedByRun = Self.idsByRun(jobs.filter(started.contains))
            for runID in runs {
                // The started jobs that run at most once end uncertain…
                var uncertain: [(id: String, attempt: Int)] = []
                for try await (id, attempts) in try await connection.query(
                    """
                    SELECT id, attempts FROM \(unescaped: table("jobs"))
                    WHERE run_id = \(runID) AND id = ANY(\(startedByRun[runID] ?? [])) AND state = 'running'
                        AND lease_owner = \(worker) AND at_most_once
                    ORDER BY id
                    """, logger: logger
                ).decode((String, Int).self) {
                    uncertain.append((id, attempts))
                }
                for job in uncertain {
                    ended =
                        try await makeUncertain(
                            JobKey(runID: runID, jobID: job.id),
                            error: AtMostOnce.givenBack(worker: worker, attempt: job.attempt), owner: worker,
                            connection) || ended
                }
                // …the others are ready now.
                try await connection.query(
                    """
                    UPDATE \(unescaped: table("jobs")) SET state = 'ready', run_at = \(now), lease_owner = NULL,
                        lease_expiry = NULL
                    WHERE run_id = \(runID) AND id = ANY(\(Self.idsByRun(jobs)[runID] ?? []))
                        AND state = 'running' AND lease_owner = \(worker)
                    """, logger: logger)
                if !uncertain.isEmpty { _ = try await endRunIfDone(runID, now: now, connection) }
            }
            try await notify(work: "", outcome: ended ? .any : nil, connection)
        }
    }

    public func resendUncertain(runID: String, now: Date) async throws -> Int {
        let now = Millis.of(now)
        let location = self.location
        return try await transaction { [self] connection in
            guard
                let state = try await connection.query(
                    "SELECT state FROM \(unescaped: table("runs")) WHERE id = \(runID) FOR UPDATE", logger: logger
                ).decode(String.self).onlyRow()
            else {
                throw DurableError.unknownRun(runID, store: location)
            }
            guard state != DurableRunState.cancelled.rawValue else { return 0 }
            var resent: [String] = []
            for try await id in try await connection.query(
                """
                UPDATE \(unescaped: table("jobs")) SET state = 'ready', run_at = \(now), error = NULL
                WHERE run_id = \(runID) AND state = 'uncertain' RETURNING id
                """, logger: logger
            ).decode(String.self) {
                resent.append(id)
            }
            guard !resent.isEmpty else { return 0 }
            // The jobs skipped for them wait again, a wave of dependents at a time: a job skipped
            // for two reasons comes back with the wave of its second.
            var wave = resent
            while !wave.isEmpty {
                var next: [String] = []
                for try await id in try await connection.query(
                    """
                    UPDATE \(unescaped: table("jobs")) j SET state = 'blocked', error = NULL,
                        waiting_on = (SELECT COUNT(*) FROM \(unescaped: table("dependencies")) d
                            JOIN \(unescaped: table("jobs")) k ON k.run_id = d.run_id AND k.id = d.depends_on
                            WHERE d.run_id = j.run_id AND d.job_id = j.id AND k.state <> 'succeeded')
                    WHERE j.run_id = \(runID) AND j.state = 'skipped'
                        AND j.id IN (SELECT job_id FROM \(unescaped: table("dependencies"))
                            WHERE run_id = \(runID) AND depends_on = ANY(\(wave)))
                        AND NOT EXISTS (SELECT 1 FROM \(unescaped: table("dependencies")) d
                            JOIN \(unescaped: table("jobs")) k ON k.run_id = d.run_id AND k.id = d.depends_on
                            WHERE d.run_id = j.run_id AND d.job_id = j.id
                                AND k.state IN ('failed', 'skipped', 'cancelled', 'uncertain'))
                    RETURNING j.id
                    """, logger: logger
                ).decode(String.self) {
                    next.append(id)
                }
                wave = next
            }
            if state == DurableRunState.failed.rawValue {
                try await connection.query(
                    // Ended, so closed if it was opened: open again, for its coordinator to go on with.
                    """
                    UPDATE \(unescaped: table("runs")) SET state = 'running', ended = NULL, open_for_jobs = opened
                    WHERE id = \(runID)
                    """,
                    logger: logger)
            }
            try await notify(work: "", connection)
            return resent.count
        }
    }
}
