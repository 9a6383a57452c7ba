import Foundation
import Orchestra
import OrchestraDurable
import PostgresNIO

extension PostgresJobStore {
    // MARK: - Submitting

    public func submit(_ run: DurableSubmission) async throws -> Bool {
        let fingerprint = run.fingerprint
        let location = self.location
        let stored = try await transaction(timeout: Self.bulkOperationTimeout) { [self] connection in
            // Two processes submitting the same id at once: the second waits, then finds it.
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext(\(schema + ".submit:" + run.runID)))", logger: logger)
            for try await existing in try await connection.query(
                "SELECT fingerprint FROM \(unescaped: table("runs")) WHERE id = \(run.runID)", logger: logger
            ).decode(String.self) {
                guard existing == fingerprint else {
                    throw DurableError.runIDInUse(run.runID, store: location)
                }
                return false
            }
            let now = Millis.of(run.now)
            try await connection.query(
                """
                INSERT INTO \(unescaped: table("runs")) (id, state, job_limit, fail_fast, fingerprint, created, open_for_jobs,
                    next_position, opened)
                VALUES (\(run.runID), 'running', \(run.limit), \(run.failurePolicy == .failFast), \(fingerprint), \(now),
                    \(run.isOpen), \(run.graph.jobs.count), \(run.isOpen))
                """, logger: logger)
            try await insertJobs(of: run, from: 0, now: now, connection)
            for (name, limit) in run.resourceLimits.sorted(by: { $0.key < $1.key }) {
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table("run_resources")) (run_id, name, resource_limit)
                    VALUES (\(run.runID), \(name), \(limit))
                    """, logger: logger)
            }
            // Every rate in one statement: a run may have one per host, thousands.
            let rates = run.resourceRates.sorted(by: { $0.key < $1.key })
            if !rates.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table("run_rates")) (run_id, name, rate_count, rate_interval_ns, burst)
                    SELECT \(run.runID), * FROM unnest(\(rates.map(\.key))::TEXT[],
                        \(rates.map { Int64($0.value.rate.count) })::BIGINT[],
                        \(rates.map(\.value.intervalNanoseconds))::BIGINT[],
                        \(rates.map { Int64($0.value.burst) })::BIGINT[])
                    """, logger: logger)
            }
            try await notify(work: "", connection)
            return true
        }
        // Fresh statistics for the planner: before autovacuum gets to it, a table that just
        // grew by thousands of rows looks empty, and claims then sorted every ready job instead
        // of reading the claim index in order (Benchmarks/History.md, figures from code comments).
        if stored, run.graph.jobs.count >= 1_000 {
            _ = try await transaction(timeout: Self.bulkOperationTimeout) { [self] connection in
                try await connection.query(
                    "ANALYZE \(unescaped: table("jobs")), \(unescaped: table("dependencies")), \(unescaped: table("job_resources"))",
                    logger: logger)
            }
        }
        return stored
    }

    /// Inserts the run's jobs, dependencies and resources, many rows per statement; the first
    /// job at position `first`. With `skippingExisting`, a job whose id the run has already is
    /// left out (with its dependencies and resources); returns the ids inserted then.
    @discardableResult
    private func insertJobs(
        of run: DurableSubmission, from first: Int, now: Int64, skippingExisting: Bool = false,
        _ connection: PostgresConnection
    ) async throws -> Set<String> {
        let jobs = Array(run.graph.jobs.enumerated())
        var inserted: Set<String> = []
        // 16 values a row: 4,000 rows stay under PostgreSQL's 65,535 parameters.
        for chunk in stride(from: 0, to: jobs.count, by: 4_000) {
            var sql = """
                INSERT INTO \(table("jobs")) (run_id, id, position, kind, input, state, waiting_on, priority,
                    critical_path, timeout_ns, max_attempts, initial_delay_ns, multiplier, max_delay_ns, run_at,
                    at_most_once) VALUES
                """
            var binds = PostgresBindings(capacity: 16 * 4_000)
            for (row, (position, job)) in jobs[chunk..<min(chunk + 4_000, jobs.count)].enumerated() {
                let dependencies = Set(job.dependencies)
                let retry = job.options.retry
                sql += row == 0 ? " (" : ", ("
                sql += (1...16).map { "$\(row * 16 + $0)" }.joined(separator: ", ") + ")"
                binds.append(run.runID)
                binds.append(job.id)
                binds.append(first + position)
                binds.append(job.kind)
                try binds.append(job.input)
                binds.append(dependencies.isEmpty ? "ready" : "blocked")
                binds.append(dependencies.count)
                binds.append(job.options.priority)
                binds.append(run.criticalPaths[position])
                binds.append(job.options.timeout?.saturatingNanoseconds)
                binds.append(retry.maxAttempts)
                binds.append(retry.initialDelay.saturatingNanoseconds)
                binds.append(retry.multiplier)
                binds.append(retry.maxDelay.saturatingNanoseconds)
                binds.append(now)
                binds.append(job.options.atMostOnce)
            }
            if skippingExisting {
                sql += " ON CONFLICT (run_id, id) DO NOTHING RETURNING id"
                for try await id in try await connection.query(
                    PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger
                ).decode(String.self) {
                    inserted.insert(id)
                }
            } else {
                try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            }
        }
        // Dependencies and resources: three text columns a row.
        var pairs: [(String, String, String)] = []
        var uses: [(String, String, String)] = []
        for job in run.graph.jobs where !skippingExisting || inserted.contains(job.id) {
            for dependency in Set(job.dependencies).sorted() { pairs.append((run.runID, job.id, dependency)) }
            for resource in Set(job.options.resources).sorted() { uses.append((run.runID, job.id, resource)) }
        }
        for (name, columns, rows) in [
            (table("dependencies"), "run_id, job_id, depends_on", pairs),
            (table("job_resources"), "run_id, job_id, name", uses),
        ] {
            for chunk in stride(from: 0, to: rows.count, by: 20_000) {
                var sql = "INSERT INTO \(name) (\(columns)) VALUES"
                var binds = PostgresBindings(capacity: 3 * 20_000)
                for (row, values) in rows[chunk..<min(chunk + 20_000, rows.count)].enumerated() {
                    sql += (row == 0 ? " " : ", ") + "($\(row * 3 + 1), $\(row * 3 + 2), $\(row * 3 + 3))"
                    binds.append(values.0)
                    binds.append(values.1)
                    binds.append(values.2)
                }
                try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            }
        }
        return inserted
    }

    public func append(_ jobs: DurableSubmission) async throws -> Int {
        let location = self.location
        let runID = jobs.runID
        let count = jobs.graph.jobs.count
        guard count > 0 else { return 0 }
        return try await transaction { [self] connection in
            // Takes the run's row lock (appends and outcomes of the run one at a time, so that it
            // cannot end, closed meanwhile, while jobs are added) and the jobs' positions, and
            // reads what the checks need: one statement. A refusal rolls it back.
            guard
                let (state, open, first, limits) = try await connection.query(
                    """
                    UPDATE \(unescaped: table("runs")) SET next_position = next_position + \(count) WHERE id = \(runID)
                    RETURNING state, open_for_jobs, next_position - \(count),
                        ARRAY(SELECT name FROM \(unescaped: table("run_resources")) WHERE run_id = \(runID)
                            UNION SELECT name FROM \(unescaped: table("run_rates"))
                            WHERE run_id = \(runID) AND rate_count IS NOT NULL)
                    """, logger: logger
                ).decode((String, Bool, Int, [String]).self).onlyRow()
            else {
                throw DurableError.unknownRun(runID, store: location)
            }
            guard state == DurableRunState.running.rawValue, open else {
                throw DurableError.runClosed(runID, state: state, store: location)
            }
            try jobs.checkResources(limitedIn: Set(limits))
            let inserted = try await insertJobs(
                of: jobs, from: first, now: Millis.of(jobs.now), skippingExisting: true, connection)
            if inserted.count < count {
                // Appended before: the same job is left as it is; another one under its id is refused.
                let skipped = jobs.graph.jobs.filter { !inserted.contains($0.id) }
                let wanted = Dictionary(skipped.map { ($0.id, $0) }) { first, _ in first }
                for try await (id, kind, input) in try await connection.query(
                    """
                    SELECT id, kind, input FROM \(unescaped: table("jobs"))
                    WHERE run_id = \(runID) AND id = ANY(\(Array(wanted.keys)))
                    """, logger: logger
                ).decode((String, String, Data).self) {
                    guard let job = wanted[id], job.kind == kind, job.input == input else {
                        throw DurableError.jobIDInUse(id, run: runID, store: location)
                    }
                }
            }
            if !inserted.isEmpty { try await notify(work: "", connection) }
            return inserted.count
        }
    }

    public func close(runID: String, now: Date) async throws -> DurableRunState? {
        let location = self.location
        return try await transaction { [self] connection in
            // `FOR UPDATE` first, which waits for the outcomes recorded under the open run's
            // shared lock (an `UPDATE` alone would not): their jobs' ends are seen below, and the
            // outcomes that come next find the run closed and may end it themselves.
            try await connection.query(
                "SELECT id FROM \(unescaped: table("runs")) WHERE id = \(runID) FOR UPDATE", logger: logger)
            guard
                try await connection.query(
                    "UPDATE \(unescaped: table("runs")) SET open_for_jobs = false WHERE id = \(runID) RETURNING id",
                    logger: logger
                ).decode(String.self).onlyRow() != nil
            else {
                throw DurableError.unknownRun(runID, store: location)
            }
            let ended = try await endRunIfDone(runID, now: Millis.of(now), connection)
            // Idle workers look again: the run they waited on may be over.
            try await notify(work: "", outcome: ended != nil ? .any : nil, connection)
            return ended
        }
    }

    /// Says, when the transaction commits, that there is new work (to the workers that wait for
    /// it, `LISTEN`: `work` names the worker whose outcomes released it, which claims next
    /// anyway, or is empty) and new outcomes (to the processes waiting for those of open runs:
    /// `outcome` names them, as ``outcomePayload(_:)`` writes it); and with `tryingClaimLock`,
    /// asks for the store-wide claim lock without waiting. One statement, none if there is
    /// nothing to do.
    ///
    /// - Returns: Whether the transaction holds the claim lock now (`false` if not asked).
    @discardableResult
    func notify(
        work: String? = nil, outcome: OutcomeNotice? = nil, tryingClaimLock: Bool = false,
        _ connection: PostgresConnection
    ) async throws -> Bool {
        var binds = PostgresBindings()
        var notifications: [String] = []
        if let work {
            binds.append(workChannel)
            binds.append(work)
            notifications.append("pg_notify($\(binds.count - 1), $\(binds.count))")
        }
        if let outcome {
            binds.append(outcomeChannel)
            binds.append(Self.outcomePayload(outcome))
            notifications.append("pg_notify($\(binds.count - 1), $\(binds.count))")
        }
        let sent = notifications.joined(separator: ", ")
        guard tryingClaimLock else {
            if !notifications.isEmpty {
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT \(sent)", binds: binds), logger: logger)
            }
            return false
        }
        binds.append(schema + ".claim")
        let lock = "pg_try_advisory_xact_lock(hashtext($\(binds.count)))"
        let sql = notifications.isEmpty ? "SELECT \(lock)" : "WITH n AS (SELECT \(sent)) SELECT \(lock) FROM n"
        return try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            .decode(Bool.self).onlyRow() == true
    }

    /// The channel on which ``notify(work:outcome:tryingClaimLock:_:)`` wakes the processes
    /// waiting for outcomes.
    var outcomeChannel: String { "\(schema)_outcome" }

    /// The payload of a notification of outcomes: the jobs named, as a JSON object of their ids
    /// by run (`{"run":["a","b"]}`), or empty for `OutcomeNotice.any` and for names longer
    /// than a notification carries (PostgreSQL's 8,000 bytes).
    static func outcomePayload(_ notice: OutcomeNotice) -> String {
        guard case .jobs(let keys) = notice,
            let data = try? JSONEncoder().encode(Dictionary(grouping: keys, by: \.runID).mapValues { $0.map(\.jobID) }),
            data.count <= 7_900
        else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// What a notification's payload on the outcome channel tells: the jobs it names, or (empty,
    /// unreadable: an older process's) `OutcomeNotice.any`.
    static func outcomeNotice(_ payload: String) -> OutcomeNotice {
        guard !payload.isEmpty, let byRun = try? JSONDecoder().decode([String: [String]].self, from: Data(payload.utf8))
        else { return .any }
        return .jobs(byRun.flatMap { run, ids in ids.map { JobKey(runID: run, jobID: $0) } })
    }

    /// The channel on which ``notify(work:outcome:tryingClaimLock:_:)`` wakes idle workers.
    var workChannel: String { "\(schema)_work" }

    // MARK: - Claiming and recording

    public func record(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob]) {
        let (recorded, claimed, _) = try await recordAndClaim(outcomes, thenClaim: claim, now: now)
        return (recorded, claimed)
    }

    package func recordAndClaim(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob], nextRelease: Date?) {
        // Names this call's claim in the jobs it marks running, so that a try that follows one
        // given up finds what that one claimed, if it committed, instead of claiming more.
        let token = UUID().uuidString
        if outcomes.isEmpty {
            // Nothing to record: a claim alone.
            guard let claim else { return ([], [], nil) }
            let (claimed, release) = try await transaction { [self] connection, current in
                try await self.claim(claim, token: token, current, connection, lock: .take, claimedBefore: false)
            }
            return ([], claimed, release.map(Nanos.dateRoundedUp))
        }
        // Outcomes first. A claim holds the store-wide claim lock and must not wait behind the
        // run locks the outcomes take, nor may the outcomes wait for the claim lock while they
        // hold run locks: so the outcomes' transaction claims too only if they released work
        // and the claim lock is free at once (a dependent ready now starts without a second
        // transaction); else the claim has a transaction of its own. The work released is
        // announced with the name of the worker that claims next, which need not be woken.
        let worker = claim?.worker ?? ""
        typealias Recorded = (recorded: [RecordedOutcome], together: ([ClaimedJob], Int64?)?, retried: Bool)
        let (recorded, together, recordRetried) = try await transaction { [self] connection, current -> Recorded in
            var recorded: [RecordedOutcome] = []
            var released = false
            var openRuns: Set<String> = []
            // Runs locked in id order: two workers recording in the same runs never deadlock.
            for runID in Set(outcomes.map(\.job.key.runID)).sorted() {
                if try await self.lockRunForOutcomes(runID, connection) == true { openRuns.insert(runID) }
            }
            // Every outcome in one statement, each only if its attempt is still the current one;
            // then the dependents of those that succeeded, one statement per run.
            let recordedNow = try await self.recordAttempts(outcomes, connection)
            // A try given up before this one may have recorded them (and released their
            // dependents): they were recorded, not refused.
            let recordedBefore =
                current.isRetry
                ? try await self.recordedEarlier(outcomes.filter { !recordedNow.contains($0.job.key) }, connection)
                : []
            for outcome in outcomes {
                let wasRecorded = recordedNow.contains(outcome.job.key) || recordedBefore.contains(outcome.job.key)
                recorded.append(RecordedOutcome(recorded: wasRecorded, runEnded: nil))
                guard recordedNow.contains(outcome.job.key), case .failed(_, let retryAt) = outcome.outcome else {
                    continue
                }
                if retryAt != nil {
                    // Idle workers look at their next due time again.
                    released = true
                } else {
                    try await self.failedForGood(outcome.job.key, connection)
                }
            }
            let succeeded = outcomes.filter { outcome in
                guard recordedNow.contains(outcome.job.key), case .succeeded = outcome.outcome else { return false }
                return true
            }
            var runsWithReadyJobs: Set<String> = []
            for (runID, ids) in Self.idsByRun(succeeded.map(\.job.key)) {
                if try await self.releaseDependents(of: ids, in: runID, now: Millis.of(now), connection) {
                    released = true
                    runsWithReadyJobs.insert(runID)
                }
            }
            // Each run's end looked for once, after all of its outcomes; told with its last. A
            // run whose dependents were just made ready (after every failure's effect above) has
            // a job to run: no statement to look (one round trip less for each link of a chain);
            // nor does a run open for jobs, which cannot end.
            let mayEnd = Set(outcomes.map(\.job.key.runID)).subtracting(runsWithReadyJobs).subtracting(openRuns)
            for runID in mayEnd.sorted() {
                guard let ended = try await endRunIfDone(runID, now: Millis.of(now), connection),
                    let last = outcomes.indices.last(where: {
                        outcomes[$0].job.key.runID == runID && recorded[$0].recorded
                    })
                else { continue }
                recorded[last].runEnded = ended
            }
            // Someone waits for the outcomes of an open run's jobs (the process that appends them).
            let waited = zip(outcomes, recorded).filter { $1.recorded && openRuns.contains($0.job.key.runID) }.map(\.0)
            // With the work released, the claim lock if it is free now (never waited for), in
            // the same statement: a claim follows in this transaction if it was.
            let locked = try await notify(
                work: released ? worker : nil, outcome: Self.notice(of: waited),
                tryingClaimLock: released && claim != nil, connection)
            guard locked, let claim else { return (recorded, nil, current.isRetry) }
            do {
                let together = try await self.claim(
                    claim, token: token, current, connection, lock: .heldWithRunLocks, claimedBefore: false)
                return (recorded, together, current.isRetry)
            } catch is ClaimNeedsRunLocks {
                return (recorded, nil, current.isRetry)
            }
        }
        if let (claimed, release) = together { return (recorded, claimed, release.map(Nanos.dateRoundedUp)) }
        guard let claim else { return (recorded, [], nil) }
        // A try of the outcomes given up after it committed may have claimed with them.
        let (claimed, release) = try await transaction { [self] connection, current in
            try await self.claim(
                claim, token: token, current, connection, lock: .take, claimedBefore: recordRetried)
        }
        return (recorded, claimed, release.map(Nanos.dateRoundedUp))
    }

    /// How a claim holds the store-wide claim lock.
    private enum ClaimLock {
        /// It takes it, waiting for it if need be (its transaction holds no other lock).
        case take
        /// Its transaction holds it already, and run locks as well (outcomes were recorded in
        /// it): the claim must not wait for a run's lock, so it throws ``ClaimNeedsRunLocks``
        /// where it would take one (when a job that runs at most once lost its lease), having
        /// claimed nothing; the claim is then made in a transaction of its own.
        case heldWithRunLocks
    }

    /// Thrown by a claim made with ``ClaimLock/heldWithRunLocks`` that needs runs' locks.
    private struct ClaimNeedsRunLocks: Error {}

    /// Claims jobs (see `JobStore/record(_:thenClaim:now:)`) inside the
    /// caller's transaction, holding the store-wide claim lock: the limits are counted from the
    /// running jobs, which only a claim adds to, and the paces of resources with a rate are read
    /// and moved on only by claims. Also returns when a resource held by its rate or a pause
    /// lets its next job go (`ClaimPlanner.nextRelease`).
    ///
    /// The jobs claimed are marked with `token`. A try that follows one given up (which may
    /// have committed unseen), or a claim after outcomes that were tried again (`claimedBefore`:
    /// their given-up try may have claimed with them), first returns the jobs claimed under the
    /// token, if any; and a try given up claims nothing once it has the lock, since a later try
    /// does its work. So a claim done twice never leaves jobs running that no worker runs (until
    /// their leases end; an at-most-once job would then be uncertain though it never started).
    ///
    /// `lock` says whether the claim takes the claim lock or its transaction holds it already
    /// (with run locks: see ``ClaimLock``).
    private func claim(
        _ claim: Claim, token: String, _ current: Try, _ connection: PostgresConnection, lock: ClaimLock,
        claimedBefore: Bool
    ) async throws -> ([ClaimedJob], Int64?) {
        let (worker, limit) = (claim.worker, claim.limit)
        guard limit > 0, !claim.kinds.isEmpty else { return ([], nil) }
        let now = Millis.of(claim.now)
        let expiry = Millis.of(claim.leaseExpiry)
        let kinds = claim.kinds.sorted()
        if lock == .take {
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext(\(schema + ".claim")))", logger: logger)
        }
        if current.wasGivenUp { return ([], nil) }
        if current.isRetry || claimedBefore {
            let earlier = try await claimedEarlier(token: token, worker: worker, connection)
            if !earlier.isEmpty { return (earlier, nil) }
        }
        // A lease that expired belongs to a worker that died (or stalled): its job is uncertain
        // if it runs at most once, else due again.
        var (runs, leaseLost, runsWithAny) = try await rooms(now: now, connection)
        if leaseLost {
            if lock == .heldWithRunLocks { throw ClaimNeedsRunLocks() }
            // Rare: made uncertain, they may have ended or stopped their runs; the rooms again.
            try await expireAtMostOnceLeases(now: now, connection)
            (runs, _, runsWithAny) = try await rooms(now: now, connection)
        }
        let runsWithRoom = runs.filter { $0.value.free > 0 }.keys.sorted()
        guard !runsWithRoom.isEmpty else { return ([], nil) }
        // Each resource's limit and the running jobs that use it, in the runs with room. From
        // the running jobs (few), each looked up in `job_resources` by its whole key: written as
        // a join, PostgreSQL scanned every job of the run that used the resource (an estimate
        // of one row for a new run), a claim costing a scan of the run.
        // In the same statement, the paces of their resources with a rate or a pause.
        // Most runs have none: then no statement reads them.
        var resources: [ClaimPlanner.Resource: ClaimPlanner.Room] = [:]
        var paces: [ClaimPlanner.Resource: ClaimPlanner.Pace] = [:]
        let runsWithRoomAndResources = runsWithRoom.filter(runsWithAny.contains)
        if !runsWithRoomAndResources.isEmpty {
            for try await (runID, name, resourceLimit, inUse, count, interval, burst, tat, pausedUntil)
                in try await connection.query(
                    """
                    SELECT rr.run_id, rr.name, rr.resource_limit, (SELECT COUNT(*) FROM \(unescaped: table("jobs")) j
                        WHERE j.run_id = rr.run_id AND j.state = 'running'
                            AND (SELECT TRUE FROM \(unescaped: table("job_resources")) r
                                WHERE r.run_id = j.run_id AND r.job_id = j.id AND r.name = rr.name) IS NOT NULL)::INTEGER,
                        NULL::BIGINT, NULL::BIGINT, NULL::BIGINT, NULL::BIGINT, NULL::BIGINT
                    FROM \(unescaped: table("run_resources")) rr WHERE rr.run_id = ANY(\(runsWithRoomAndResources))
                    UNION ALL
                    SELECT run_id, name, NULL::INTEGER, NULL::INTEGER, rate_count, rate_interval_ns, burst, tat_ns,
                        paused_until_ns
                    FROM \(unescaped: table("run_rates")) WHERE run_id = ANY(\(runsWithRoomAndResources))
                    """, logger: logger
                ).decode((String, String, Int?, Int?, Int64?, Int64?, Int64?, Int64?, Int64?).self)
            {
                let resource = ClaimPlanner.Resource(runID: runID, name: name)
                if let resourceLimit {
                    resources[resource] = ClaimPlanner.Room(limit: resourceLimit, inUse: inUse ?? 0)
                } else {
                    paces[resource] = ClaimPlanner.Pace(
                        DurableRate(
                            storedCount: count.map { Int(clamping: $0) }, intervalNanoseconds: interval,
                            burst: burst.map { Int(clamping: $0) }),
                        tat: tat ?? 0, pausedUntil: pausedUntil ?? 0)
                }
            }
        }
        let runsWithResources = Set(resources.keys.map(\.runID)).union(paces.keys.map(\.runID)).sorted()
        var planner = ClaimPlanner(
            limit: limit, kinds: claim.kinds, now: now, runs: runs, resources: resources, paces: paces,
            instant: Nanos.of(claim.now))
        var claimed: [ClaimedJob] = []
        while let page = planner.nextPage() {
            // The page's rows: the ready jobs in claim order (the claim index), of runs with
            // room, using no full resource; locked, and those another transaction holds skipped.
            var jobs: [JobKey: ClaimedJob] = [:]
            var candidates: [ClaimPlanner.Candidate] = []
            for try await (
                runID, id, kind, priority, criticalPath, runAt, position, input, attempts, timeout, maxAttempts,
                initialDelay, multiplier, maxDelay, uses
            )
                in try await connection.execute(
                    PreparedStatements.ClaimPage(
                        runsWithResources: runsWithResources, now: now, kinds: kinds, runs: page.runs,
                        fullResources: page.fullResources, size: page.size),
                    logger: logger)
            {
                let key = JobKey(runID: runID, jobID: id)
                candidates.append(
                    ClaimPlanner.Candidate(
                        key: key, kind: kind, priority: priority, criticalPath: criticalPath, due: runAt,
                        position: position, resources: uses))
                jobs[key] = ClaimedJob(
                    key: key, kind: kind, input: input, attempt: attempts + 1, dependencyOutputs: [:],
                    timeout: timeout.map { .nanoseconds($0) },
                    retry: DurableRetry(
                        maxAttempts: maxAttempts, initialDelay: .nanoseconds(initialDelay), multiplier: multiplier,
                        maxDelay: .nanoseconds(maxDelay)))
            }
            let taken = planner.take(candidates).compactMap { jobs[$0.key] }
            claimed += try await markRunning(taken, worker: worker, expiry: expiry, token: token, connection)
        }
        // The paces the claim moved on, in its transaction (under the claim lock): one statement.
        let moved = planner.changedPaces.sorted()
        if !moved.isEmpty {
            try await connection.query(
                """
                UPDATE \(unescaped: table("run_rates")) p SET tat_ns = m.tat
                FROM unnest(\(moved.map(\.runID))::TEXT[], \(moved.map(\.name))::TEXT[],
                    \(moved.map { planner.paces[$0]!.tat })::BIGINT[]) AS m (run_id, name, tat)
                WHERE p.run_id = m.run_id AND p.name = m.name
                """, logger: logger)
        }
        return (claimed, planner.nextRelease)
    }

    public func pauseResource(_ resource: String, of runID: String, until: Date, now: Date) async throws {
        guard let until = ClaimPlanner.Pace.pauseEnd(until, now: now) else { return }
        try await transaction { [self] connection in
            // Under the claim lock: a claim under way reads the pause before or after, whole.
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext(\(schema + ".claim")))", logger: logger)
            try await connection.query(
                """
                INSERT INTO \(unescaped: table("run_rates")) (run_id, name, paused_until_ns)
                SELECT id, \(resource), \(until) FROM \(unescaped: table("runs"))
                WHERE id = \(runID) AND state = 'running'
                ON CONFLICT (run_id, name) DO UPDATE SET paused_until_ns = GREATEST(
                    \(unescaped: table("run_rates")).paused_until_ns, EXCLUDED.paused_until_ns)
                """, logger: logger)
        }
    }

    /// The jobs a claim marked with `token` still runs under `worker`'s lease (a try of it
    /// given up that committed), with the outputs of their dependencies, in claim order.
    private func claimedEarlier(
        token: String, worker: String, _ connection: PostgresConnection
    ) async throws -> [ClaimedJob] {
        var jobs: [ClaimedJob] = []
        for try await (
            runID, id, kind, input, attempts, timeout, maxAttempts, initialDelay, multiplier, maxDelay
        ) in try await connection.query(
            """
            SELECT j.run_id, j.id, j.kind, j.input, j.attempts, j.timeout_ns, j.max_attempts, j.initial_delay_ns,
                j.multiplier, j.max_delay_ns
            FROM \(unescaped: table("jobs")) j
            WHERE j.claim_token = \(token) AND j.lease_owner = \(worker) AND j.state = 'running'
            ORDER BY \(unescaped: ClaimPlanner.orderBy("j."))
            """, logger: logger
        ).decode((String, String, String, Data, Int, Int64?, Int, Int64, Double, Int64).self) {
            jobs.append(
                ClaimedJob(
                    key: JobKey(runID: runID, jobID: id), kind: kind, input: input, attempt: attempts,
                    dependencyOutputs: [:], timeout: timeout.map { .nanoseconds($0) },
                    retry: DurableRetry(
                        maxAttempts: maxAttempts, initialDelay: .nanoseconds(initialDelay), multiplier: multiplier,
                        maxDelay: .nanoseconds(maxDelay))))
        }
        return try await withDependencyOutputs(jobs, marking: nil, connection)
    }

    /// Each running run's room (its limit and the jobs it runs), after making the jobs whose
    /// lease expired at `now` ready again (those that run at least once), in one statement with
    /// what else a claim must look at: whether a job that runs at most once lost its lease
    /// (then ``expireAtMostOnceLeases(now:_:)`` makes it uncertain), and which runs have
    /// resources with a limit, a rate or a pause.
    ///
    /// The statement reads the jobs as they were before its update, so the jobs it made ready
    /// are taken off the running ones.
    private func rooms(
        now: Int64, _ connection: PostgresConnection
    ) async throws -> (rooms: [String: ClaimPlanner.Room], atMostOnceLeaseLost: Bool, withResources: Set<String>) {
        var rooms: [String: ClaimPlanner.Room] = [:]
        var leaseLost = false
        var withResources: Set<String> = []
        // One row even when no run is running: the lease of a cancelled run's job counts too.
        for try await (runID, jobLimit, running, hasResources, lost) in try await connection.execute(
            PreparedStatements.Rooms(now: now), logger: logger)
        {
            leaseLost = lost
            guard let runID, let jobLimit else { continue }
            rooms[runID] = ClaimPlanner.Room(limit: jobLimit, inUse: running ?? 0)
            if hasResources == true { withResources.insert(runID) }
        }
        return (rooms, leaseLost, withResources)
    }

    /// Marks `jobs` running under `worker`'s lease until `expiry`, their attempt counted and
    /// `token` naming the claim, and returns them with the outputs of their dependencies: one
    /// statement per run.
    private func markRunning(
        _ jobs: [ClaimedJob], worker: String, expiry: Int64, token: String, _ connection: PostgresConnection
    ) async throws -> [ClaimedJob] {
        try await withDependencyOutputs(jobs, marking: (worker, expiry, token), connection)
    }

    /// `jobs` with the outputs of their dependencies, marked running first (in the same
    /// statement) if `marking` says under which lease and claim.
    private func withDependencyOutputs(
        _ jobs: [ClaimedJob], marking: (worker: String, expiry: Int64, token: String)?,
        _ connection: PostgresConnection
    ) async throws -> [ClaimedJob] {
        var jobs = jobs
        var positions: [JobKey: Int] = [:]
        for (index, job) in jobs.enumerated() { positions[job.key] = index }
        for (runID, ids) in Self.idsByRun(jobs.map(\.key)) {
            // The update runs whether or not the query reads it (and only if `marking` is
            // given); the outputs are of other jobs.
            for try await (id, dependency, output) in try await connection.execute(
                PreparedStatements.DependencyOutputs(runID: runID, ids: ids, marking: marking), logger: logger)
            {
                if let index = positions[JobKey(runID: runID, jobID: id)] {
                    jobs[index].dependencyOutputs[dependency] = output ?? Data()
                }
            }
        }
        return jobs
    }

    /// Of `outcomes` (not recorded by this try), those an earlier try recorded: the job is in
    /// the state the outcome gave it, at the same attempt, and nobody holds it.
    private func recordedEarlier(
        _ outcomes: [AttemptOutcome], _ connection: PostgresConnection
    ) async throws -> Set<JobKey> {
        guard !outcomes.isEmpty else { return [] }
        let states = outcomes.map { outcome in
            switch outcome.outcome {
            case .succeeded: "succeeded"
            case .failed(_, let retryAt): retryAt == nil ? "failed" : "ready"
            }
        }
        var recorded: Set<JobKey> = []
        for try await (runID, id) in try await connection.query(
            """
            SELECT j.run_id, j.id FROM \(unescaped: table("jobs")) j
            JOIN unnest(\(outcomes.map(\.job.key.runID))::TEXT[], \(outcomes.map(\.job.key.jobID))::TEXT[],
                \(outcomes.map(\.job.attempt))::BIGINT[], \(states)::TEXT[]) AS o (run_id, id, attempt, state)
                ON j.run_id = o.run_id AND j.id = o.id
            WHERE j.state = o.state AND j.attempts = o.attempt AND j.lease_owner IS NULL
            """, logger: logger
        ).decode((String, String).self) {
            recorded.insert(JobKey(runID: runID, jobID: id))
        }
        return recorded
    }

    /// Records `outcomes` inside the caller's transaction, which holds their runs' locks, in one
    /// statement: each only if its attempt is still the job's current one (not one whose lease
    /// expired and whose job was claimed again, nor one of a cancelled run). Returns the jobs
    /// whose outcome was recorded.
    private func recordAttempts(
        _ outcomes: [AttemptOutcome], _ connection: PostgresConnection
    ) async throws -> Set<JobKey> {
        var runs: [String] = []
        var ids: [String] = []
        var attempts: [Int] = []
        var states: [String] = []
        var outputs: [ByteBuffer] = []
        var errors: [String] = []
        var hasError: [Bool] = []
        var runAts: [Int64] = []
        for outcome in outcomes {
            runs.append(outcome.job.key.runID)
            ids.append(outcome.job.key.jobID)
            attempts.append(outcome.job.attempt)
            switch outcome.outcome {
            case .succeeded(let output):
                states.append("succeeded")
                outputs.append(ByteBuffer(bytes: output))
                errors.append("")
                hasError.append(false)
                runAts.append(-1)
            case .failed(let message, let retryAt):
                // A retry is ready again at its time; without one the job has failed.
                states.append(retryAt == nil ? "failed" : "ready")
                outputs.append(ByteBuffer())
                errors.append(message)
                hasError.append(true)
                runAts.append(retryAt.map(Millis.of) ?? -1)
            }
        }
        var current: Set<JobKey> = []
        for try await (runID, id) in try await connection.execute(
            PreparedStatements.RecordAttempts(
                runs: runs, ids: ids, attempts: attempts, states: states, outputs: outputs, errors: errors,
                hasError: hasError, runAts: runAts),
            logger: logger)
        {
            current.insert(JobKey(runID: runID, jobID: id))
        }
        return current
    }

    /// Counts the succeeded jobs `ids` of run `runID` done for each of their dependents (two at
    /// once for a dependent of two of them); those left waiting on none become ready. Returns
    /// whether one did.
    private func releaseDependents(
        of ids: [String], in runID: String, now: Int64, _ connection: PostgresConnection
    ) async throws -> Bool {
        let rows = try await connection.execute(
            PreparedStatements.ReleaseDependents(runID: runID, ids: ids, now: now), logger: logger)
        var released = false
        for try await state in rows where state == "ready" { released = true }
        return released
    }

    /// Locks run `runID`'s row for recording its outcomes in the caller's transaction, and
    /// returns whether it is open for jobs (`nil`: no such run).
    ///
    /// A run open for jobs cannot end, so its outcomes need not wait for its appends nor for
    /// each other: they take the shared ``PreparedStatements/LockOpenRun`` (which a close
    /// waits for). Only a run that may end, or not known open, is locked for its outcomes alone
    /// (``PreparedStatements/LockRun``), which appends wait for: the run this store last saw
    /// open is locked shared first, and also exclusively if it has been closed since.
    func lockRunForOutcomes(_ runID: String, _ connection: PostgresConnection) async throws -> Bool? {
        if runsSeenOpen.withLock({ $0.contains(runID) }) {
            let open = try await connection.execute(PreparedStatements.LockOpenRun(runID: runID), logger: logger)
                .onlyRow()
            if open == true { return true }
            runsSeenOpen.withLock { _ = $0.remove(runID) }
            guard open != nil else { return nil }
        }
        let open = try await connection.execute(PreparedStatements.LockRun(runID: runID), logger: logger).onlyRow()
        if open == true {
            runsSeenOpen.withLock { runs in
                if runs.count >= 1_024 { runs.removeAll() }
                runs.insert(runID)
            }
        }
        return open
    }

    /// What a notification tells of `outcomes` recorded in open runs (which cannot end): the jobs
    /// that succeeded, if that is all that ended (those failed to be tried again ended nothing);
    /// any job, if one failed for good (its dependents failed or were skipped); nothing if
    /// nothing ended.
    static func notice(of outcomes: [AttemptOutcome]) -> OutcomeNotice? {
        var succeeded: [JobKey] = []
        for outcome in outcomes {
            switch outcome.outcome {
            case .succeeded: succeeded.append(outcome.job.key)
            case .failed(_, retryAt: .some): break
            case .failed(_, retryAt: nil): return .any
            }
        }
        return succeeded.isEmpty ? nil : .jobs(succeeded)
    }

    /// What a job that failed for good (recorded in the caller's transaction) does to the
    /// others: under fail-fast it stops the run, else it skips its dependents.
    func failedForGood(_ key: JobKey, outcome: String = "failed", _ connection: PostgresConnection) async throws {
        let (runID, id) = (key.runID, key.jobID)
        let failFast = try await connection.query(
            "SELECT fail_fast FROM \(unescaped: table("runs")) WHERE id = \(runID)", logger: logger
        ).decode(Bool.self).onlyRow()
        if failFast == true {
            try await connection.query(
                """
                UPDATE \(unescaped: table("jobs")) SET state = 'cancelled',
                    error = \("the run stopped: job '\(id)' \(outcome)"), lease_owner = NULL, lease_expiry = NULL
                WHERE run_id = \(runID) AND state IN ('blocked', 'ready', 'running')
                """, logger: logger)
        } else {
            // Every job that depends on it, directly or not (all blocked: one dependency can no
            // longer succeed).
            try await connection.query(
                """
                WITH RECURSIVE dependents (id) AS (
                    SELECT job_id FROM \(unescaped: table("dependencies"))
                    WHERE run_id = \(runID) AND depends_on = \(id)
                    UNION
                    SELECT d.job_id FROM \(unescaped: table("dependencies")) d
                    JOIN dependents ON d.run_id = \(runID) AND d.depends_on = dependents.id
                )
                UPDATE \(unescaped: table("jobs")) SET state = 'skipped', error = \("not run: job '\(id)' \(outcome)")
                WHERE run_id = \(runID) AND state = 'blocked' AND id IN (SELECT id FROM dependents)
                """, logger: logger)
        }
    }

    /// Ends the run if none of its jobs is left to run: succeeded if every job did, else failed.
    /// The caller holds the run's lock, so two workers recording its last jobs at once cannot
    /// both miss the end.
    func endRunIfDone(
        _ runID: String, now: Int64, _ connection: PostgresConnection
    ) async throws
        -> DurableRunState?
    {
        // EXISTS stops at the first open job; the count is made only once none is left (made
        // for every outcome, it cost as much as the run's jobs: a run quadratic in its size).
        let open = try await connection.execute(PreparedStatements.RunHasOpenJobs(runID: runID), logger: logger)
            .onlyRow()
        guard open == false else { return nil }
        let unsuccessful =
            try await connection.query(
                """
                SELECT COUNT(*)::INTEGER FROM \(unescaped: table("jobs")) WHERE run_id = \(runID) AND state != 'succeeded'
                """, logger: logger
            ).decode(Int.self).onlyRow() ?? 0
        let state: DurableRunState = unsuccessful == 0 ? .succeeded : .failed
        let ended =
            try await connection.query(
                """
                UPDATE \(unescaped: table("runs")) SET state = \(state.rawValue), ended = \(now)
                WHERE id = \(runID) AND state = 'running' AND NOT open_for_jobs RETURNING id
                """, logger: logger
            ).decode(String.self).onlyRow() != nil
        return ended ? state : nil
    }
}
