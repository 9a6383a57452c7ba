import Foundation
import GRDB
import Orchestra

/// A ``JobStore`` in one SQLite file, through GRDB: WAL journal, versioned migrations, every
/// change one transaction.
///
/// ```swift
/// let store = try SQLiteJobStore(path: "/var/lib/myapp/runs.sqlite")
/// let queue = DurableQueue(store: store)
/// ```
///
/// SQLite has one writer at a time, so a worker claims a batch of jobs in one transaction.
/// With `synchronous = NORMAL` (the usual choice with WAL) a transaction committed before a
/// process is killed is kept; after a power loss the last ones may roll back, which re-runs
/// their jobs (at least once) and never records an outcome twice.
public final class SQLiteJobStore: JobStore {
    private let database: DatabaseQueue
    /// The file, for messages.
    public let path: String

    /// Opens (or creates) the store at `path`.
    ///
    /// - Throws: ``DurableError`` with code ``DurableError/Code/notADatabase`` if the file is
    ///   not a SQLite database, ``DurableError/Code/foreignDatabase`` if it is another
    ///   program's, ``DurableError/Code/schemaFromNewerVersion`` if a newer Orchestra wrote it,
    ///   ``DurableError/Code/storeFailed`` if SQLite cannot open it.
    public init(path: String) throws(DurableError) {
        self.path = path
        database = try Self.fileFormat.open(path: path, migrator: Self.migrator)
    }

    /// A store error as a ``DurableError`` naming the file.
    static func mapped(_ error: any Error, path: String) -> DurableError {
        fileFormat.mapped(error, path: path)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await database.write(body)
        } catch {
            throw Self.mapped(error, path: path)
        }
    }

    /// Runs `body` in a read transaction (`DatabaseQueue.snapshotRead(_:)`).
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await database.snapshotRead(body)
        } catch {
            throw Self.mapped(error, path: path)
        }
    }

    // MARK: - Submitting

    public func submit(_ run: DurableSubmission) async throws -> Bool {
        let fingerprint = run.fingerprint
        let path = self.path
        return try await write { db in
            if let existing = try String.fetchOne(
                db.cachedStatement(sql: "SELECT fingerprint FROM runs WHERE id = ?"), arguments: [run.runID])
            {
                guard existing == fingerprint else {
                    throw DurableError.runIDInUse(run.runID, store: path)
                }
                return false
            }
            let now = Millis.of(run.now)
            try db.cachedStatement(
                sql: """
                    INSERT INTO runs (id, state, job_limit, fail_fast, fingerprint, created, open_for_jobs, next_position,
                        opened)
                    VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                run.runID, run.limit, run.failurePolicy == .failFast, fingerprint, now, run.isOpen,
                run.graph.jobs.count, run.isOpen,
            ])
            try Self.insertJobs(of: run, from: 0, now: now, db)
            for (name, limit) in run.resourceLimits {
                try db.cachedStatement(
                    sql: "INSERT INTO run_resources (run_id, name, resource_limit) VALUES (?, ?, ?)"
                ).execute(arguments: [run.runID, name, limit])
            }
            for (name, rate) in run.resourceRates {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO run_rates (run_id, name, rate_count, rate_interval_ns, burst) VALUES (?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [run.runID, name, rate.rate.count, rate.intervalNanoseconds, rate.burst])
            }
            return true
        }
    }

    /// Inserts the run's jobs, their dependencies and resources, the first at `position`.
    private static func insertJobs(of run: DurableSubmission, from position: Int, now: Int64, _ db: Database) throws {
        let insertJob = try db.cachedStatement(
            sql: """
                INSERT INTO jobs (run_id, id, position, kind, input, state, waiting_on, priority, critical_path,
                    timeout_ns, max_attempts, initial_delay_ns, multiplier, max_delay_ns, run_at, at_most_once)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let insertDependency = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO dependencies (run_id, job_id, depends_on) VALUES (?, ?, ?)")
        let insertResource = try db.cachedStatement(
            sql: "INSERT INTO job_resources (run_id, job_id, name) VALUES (?, ?, ?)")
        for (index, job) in run.graph.jobs.enumerated() {
            let dependencies = Set(job.dependencies)
            let retry = job.options.retry
            try insertJob.execute(arguments: [
                run.runID, job.id, position + index, job.kind, job.input, dependencies.isEmpty ? "ready" : "blocked",
                dependencies.count, job.options.priority, run.criticalPaths[index],
                job.options.timeout?.saturatingNanoseconds,
                retry.maxAttempts, retry.initialDelay.saturatingNanoseconds, retry.multiplier,
                retry.maxDelay.saturatingNanoseconds, now, job.options.atMostOnce,
            ])
            for dependency in dependencies {
                try insertDependency.execute(arguments: [run.runID, job.id, dependency])
            }
            for resource in Set(job.options.resources) {
                try insertResource.execute(arguments: [run.runID, job.id, resource])
            }
        }
    }

    public func append(_ jobs: DurableSubmission) async throws -> Int {
        let path = self.path
        return try await write { db in
            let runID = jobs.runID
            guard
                let run = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT state, open_for_jobs, next_position FROM runs WHERE id = ?"),
                    arguments: [runID])
            else {
                throw DurableError.unknownRun(runID, store: path)
            }
            guard run[0] as String == DurableRunState.running.rawValue, run[1] as Bool else {
                throw DurableError.runClosed(runID, state: run[0], store: path)
            }
            try jobs.checkResources(
                limitedIn: Set(
                    try String.fetchAll(
                        db.cachedStatement(
                            sql: """
                                SELECT name FROM run_resources WHERE run_id = ?1
                                UNION SELECT name FROM run_rates WHERE run_id = ?1 AND rate_count IS NOT NULL
                                """), arguments: [runID]))
            )
            let existing = try db.cachedStatement(sql: "SELECT kind, input FROM jobs WHERE run_id = ? AND id = ?")
            var new = jobs
            var kept: [DurableGraph.Job] = []
            var paths: [Double] = []
            for (index, job) in jobs.graph.jobs.enumerated() {
                if let row = try Row.fetchOne(existing, arguments: [runID, job.id]) {
                    guard row[0] as String == job.kind, row[1] as Data == job.input else {
                        throw DurableError.jobIDInUse(job.id, run: runID, store: path)
                    }
                    continue
                }
                kept.append(job)
                paths.append(jobs.criticalPaths[index])
            }
            new.graph.jobs = kept
            new.criticalPaths = paths
            let position: Int = run[2]
            try db.cachedStatement(sql: "UPDATE runs SET next_position = ? WHERE id = ?").execute(
                arguments: [position + kept.count, runID])
            try Self.insertJobs(of: new, from: position, now: Millis.of(jobs.now), db)
            return kept.count
        }
    }

    public func close(runID: String, now: Date) async throws -> DurableRunState? {
        let path = self.path
        return try await write { db in
            try db.cachedStatement(sql: "UPDATE runs SET open_for_jobs = 0 WHERE id = ?").execute(arguments: [runID])
            guard db.changesCount > 0 else { throw DurableError.unknownRun(runID, store: path) }
            return try Self.endRunIfDone(runID, now: Millis.of(now), db)
        }
    }

    public func jobs(of runID: String, ids: [String]) async throws -> [DurableJobRecord] {
        guard !ids.isEmpty else { return [] }
        return try await read { db in
            let select = try db.cachedStatement(
                sql: """
                    SELECT id, kind, state, attempts, error, output, run_at, input, position FROM jobs
                    WHERE run_id = ? AND id = ?
                    """)
            return try Set(ids).compactMap { try Row.fetchOne(select, arguments: [runID, $0]) }
                .sorted { (first: Row, second: Row) in (first[8] as Int) < (second[8] as Int) }
                .map(Self.jobRecord)
        }
    }

    // MARK: - Claiming

    public func record(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob]) {
        let (recorded, claimed, _) = try await recordAndClaim(outcomes, thenClaim: claim, now: now)
        return (recorded, claimed)
    }

    package func recordAndClaim(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob], nextRelease: Date?) {
        try await write { db in
            let recorded = try outcomes.map { try Self.record($0.outcome, for: $0.job, now: Millis.of(now), db) }
            let (claimed, release) = try claim.map { try Self.claim($0, db) } ?? ([], nil)
            return (recorded, claimed, release.map(Nanos.dateRoundedUp))
        }
    }

    /// Claims jobs (see ``JobStore/record(_:thenClaim:now:)``) inside the caller's transaction;
    /// also returns when a resource held by its rate or a pause lets its next job go
    /// (``ClaimPlanner/nextRelease``).
    private static func claim(_ claim: Claim, _ db: Database) throws -> ([ClaimedJob], Int64?) {
        let (worker, kinds, limit) = (claim.worker, claim.kinds, claim.limit)
        guard limit > 0, !kinds.isEmpty else { return ([], nil) }
        let now = Millis.of(claim.now)
        let expiry = Millis.of(claim.leaseExpiry)
        // A lease that expired belongs to a worker that died (or stalled): its job is due again,
        // or uncertain if it runs at most once.
        try Self.expireLeases(now: now, db)
        // What the planner needs (ClaimPlanner holds the rules): each run's limit and running
        // jobs, and, in the runs with room, each resource's limit and the running jobs that use
        // it (read through the running jobs, which are few).
        var runs: [String: ClaimPlanner.Room] = [:]
        for row in try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT runs.id, runs.job_limit, (SELECT COUNT(*) FROM jobs
                        WHERE jobs.run_id = runs.id AND jobs.state = 'running') AS running
                    FROM runs WHERE state = 'running'
                    """))
        {
            runs[row[0]] = ClaimPlanner.Room(limit: row[1], inUse: row[2])
        }
        var resources: [ClaimPlanner.Resource: ClaimPlanner.Room] = [:]
        var paces: [ClaimPlanner.Resource: ClaimPlanner.Pace] = [:]
        for runID in runs.filter({ $0.value.free > 0 }).keys.sorted() {
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT name, rate_count, rate_interval_ns, burst, tat_ns, paused_until_ns FROM run_rates
                        WHERE run_id = ?
                        """), arguments: [runID])
            {
                paces[ClaimPlanner.Resource(runID: runID, name: row[0])] = ClaimPlanner.Pace(
                    DurableRate(storedCount: row[1], intervalNanoseconds: row[2], burst: row[3]), tat: row[4],
                    pausedUntil: row[5])
            }
            let limits = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT name, resource_limit FROM run_resources WHERE run_id = ?"),
                arguments: [runID])
            guard !limits.isEmpty else { continue }
            var inUse: [String: Int] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT job_resources.name, COUNT(*) FROM jobs
                        JOIN job_resources ON job_resources.run_id = jobs.run_id AND job_resources.job_id = jobs.id
                        WHERE jobs.run_id = ? AND jobs.state = 'running' GROUP BY job_resources.name
                        """), arguments: [runID])
            {
                inUse[row[0]] = row[1]
            }
            for row in limits {
                let name: String = row[0]
                resources[ClaimPlanner.Resource(runID: runID, name: name)] = ClaimPlanner.Room(
                    limit: row[1], inUse: inUse[name] ?? 0)
            }
        }
        let runsWithResources = Set(resources.keys.map(\.runID)).union(paces.keys.map(\.runID))
        // Pages of the jobs wanted: another page costs no round trip here, a row read more does.
        var planner = ClaimPlanner(
            limit: limit, kinds: kinds, now: now, runs: runs, resources: resources, paces: paces,
            instant: Nanos.of(claim.now), pageSize: .wanted)
        let resourcesOfJob = try db.cachedStatement(
            sql: "SELECT name FROM job_resources WHERE run_id = ? AND job_id = ?")
        let mark = try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = ?, lease_expiry = ?
                WHERE run_id = ? AND id = ?
                """)
        // INDEXED BY: left to itself, SQLite read every dependency of the run through the
        // primary key's prefix, a cost per job that grew with the run (Benchmarks/History.md,
        // durable runs on SQLite).
        let outputs = try db.cachedStatement(
            sql: """
                SELECT jobs.id, jobs.output FROM dependencies INDEXED BY dependencies_of_job
                JOIN jobs ON jobs.run_id = dependencies.run_id AND jobs.id = dependencies.depends_on
                WHERE dependencies.run_id = ? AND dependencies.job_id = ?
                """)
        let kindList = kinds.sorted()
        var claimed: [ClaimedJob] = []
        while let page = planner.nextPage() {
            // The page's rows: the ready jobs in claim order (the claim index), of runs with
            // room, using no full resource.
            // The full (or held) resources in a temporary table of the connection, not as a list
            // in the statement: an `OR` per resource made SQLite refuse a claim with a thousand of
            // them held ("Expression tree is too large"), which a run with a rate per host reaches.
            let full = page.fullResources
            if !full.isEmpty { try Self.hold(full, db) }
            let skipFull =
                full.isEmpty
                ? ""
                : """
                AND NOT EXISTS (SELECT 1 FROM job_resources JOIN temp.claim_held
                        ON claim_held.run_id = job_resources.run_id AND claim_held.name = job_resources.name
                    WHERE job_resources.run_id = jobs.run_id AND job_resources.job_id = jobs.id)
                """
            var arguments: [any DatabaseValueConvertible] = [now]
            arguments += kindList
            arguments += page.runs
            arguments.append(page.size)
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT run_id, id, kind, priority, critical_path, run_at, position, input, attempts,
                            timeout_ns, max_attempts, initial_delay_ns, multiplier, max_delay_ns
                        FROM jobs INDEXED BY jobs_claim
                        WHERE state = 'ready' AND run_at <= ? AND kind IN (\(Self.placeholders(kindList.count)))
                            AND run_id IN (\(Self.placeholders(page.runs.count))) \(skipFull)
                        ORDER BY \(ClaimPlanner.orderBy(""))
                        LIMIT ?
                        """),
                arguments: StatementArguments(arguments))
            var rowOf: [JobKey: Row] = [:]
            var candidates: [ClaimPlanner.Candidate] = []
            for row in rows {
                let key = JobKey(runID: row[0], jobID: row[1])
                rowOf[key] = row
                let uses =
                    try runsWithResources.contains(key.runID)
                    ? String.fetchAll(resourcesOfJob, arguments: [key.runID, key.jobID]) : []
                candidates.append(
                    ClaimPlanner.Candidate(
                        key: key, kind: row[2], priority: row[3], criticalPath: row[4], due: row[5], position: row[6],
                        resources: uses))
            }
            for candidate in planner.take(candidates) {
                let (key, row) = (candidate.key, rowOf[candidate.key]!)
                try mark.execute(arguments: [worker, expiry, key.runID, key.jobID])
                let timeout: Int64? = row[9]
                var job = ClaimedJob(
                    key: key, kind: candidate.kind, input: row[7], attempt: (row[8] as Int) + 1,
                    dependencyOutputs: [:], timeout: timeout.map { .nanoseconds($0) },
                    retry: DurableRetry(
                        maxAttempts: row[10], initialDelay: .nanoseconds(row[11] as Int64), multiplier: row[12],
                        maxDelay: .nanoseconds(row[13] as Int64)))
                for output in try Row.fetchAll(outputs, arguments: [key.runID, key.jobID]) {
                    let data: Data? = output[1]
                    job.dependencyOutputs[output[0]] = data ?? Data()
                }
                claimed.append(job)
            }
        }
        // The paces the claim moved on, in its transaction.
        let moved = try db.cachedStatement(sql: "UPDATE run_rates SET tat_ns = ? WHERE run_id = ? AND name = ?")
        for resource in planner.changedPaces.sorted() {
            try moved.execute(arguments: [planner.paces[resource]!.tat, resource.runID, resource.name])
        }
        return (claimed, planner.nextRelease)
    }

    /// Makes `resources` the rows of the connection's temporary table `claim_held`, which a
    /// claim's page reads to leave out the jobs of full or held resources.
    private static func hold(_ resources: [ClaimPlanner.Resource], _ db: Database) throws {
        try db.execute(
            sql: "CREATE TEMP TABLE IF NOT EXISTS claim_held (run_id TEXT, name TEXT, PRIMARY KEY (run_id, name))")
        try db.cachedStatement(sql: "DELETE FROM temp.claim_held").execute()
        let insert = try db.cachedStatement(sql: "INSERT INTO temp.claim_held (run_id, name) VALUES (?, ?)")
        for resource in resources { try insert.execute(arguments: [resource.runID, resource.name]) }
    }

    public func pauseResource(_ resource: String, of runID: String, until: Date, now: Date) async throws {
        guard let until = ClaimPlanner.Pace.pauseEnd(until, now: now) else { return }
        try await write { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO run_rates (run_id, name, paused_until_ns)
                    SELECT id, ?2, ?3 FROM runs WHERE id = ?1 AND state = 'running'
                    ON CONFLICT (run_id, name) DO UPDATE
                        SET paused_until_ns = MAX(paused_until_ns, excluded.paused_until_ns)
                    """
            ).execute(arguments: [runID, resource, until])
        }
    }

    // MARK: - Recording outcomes

    /// Records one outcome (see ``JobStore/record(_:thenClaim:now:)``) inside the caller's
    /// transaction.
    private static func record(
        _ outcome: JobOutcome, for job: ClaimedJob, now: Int64, _ db: Database
    ) throws
        -> RecordedOutcome
    {
        let key = job.key
        guard
            let current = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT state, attempts FROM jobs WHERE run_id = ? AND id = ?"),
                arguments: [key.runID, key.jobID]),
            current[0] as String == "running", current[1] as Int == job.attempt
        else {
            // Not this attempt's to record: the lease expired and the job was claimed
            // again, or the run was cancelled.
            return RecordedOutcome(recorded: false, runEnded: nil)
        }
        switch outcome {
        case .succeeded(let output):
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'succeeded', output = ?, error = NULL, lease_owner = NULL,
                        lease_expiry = NULL
                    WHERE run_id = ? AND id = ?
                    """
            ).execute(arguments: [output, key.runID, key.jobID])
            try Self.release(dependentsOf: key, now: now, db)
        case .failed(let message, let retryAt?):
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'ready', run_at = ?, error = ?, lease_owner = NULL, lease_expiry = NULL
                    WHERE run_id = ? AND id = ?
                    """
            ).execute(arguments: [Millis.of(retryAt), message, key.runID, key.jobID])
        case .failed(let message, nil):
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'failed', error = ?, lease_owner = NULL, lease_expiry = NULL
                    WHERE run_id = ? AND id = ?
                    """
            ).execute(arguments: [message, key.runID, key.jobID])
            try Self.endedUnsuccessfully(key, db)
        }
        return RecordedOutcome(recorded: true, runEnded: try Self.endRunIfDone(key.runID, now: now, db))
    }

    /// Counts one dependency done for each dependent of `key`; those left waiting on none
    /// become ready.
    /// (`+state`: an index on the state would make SQLite read every blocked job of the run for
    /// each outcome; the dependents' ids lead it straight to them.)
    private static func release(dependentsOf key: JobKey, now: Int64, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                UPDATE jobs SET waiting_on = waiting_on - 1
                WHERE run_id = ?1 AND id IN (SELECT job_id FROM dependencies WHERE run_id = ?1 AND depends_on = ?2)
                """
        ).execute(arguments: [key.runID, key.jobID])
        try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = 'ready', run_at = ?3
                WHERE run_id = ?1 AND +state = 'blocked' AND waiting_on = 0
                    AND id IN (SELECT job_id FROM dependencies WHERE run_id = ?1 AND depends_on = ?2)
                """
        ).execute(arguments: [key.runID, key.jobID, now])
    }

    /// What a job that ended without success (failed for good, or uncertain: `outcome` says
    /// which) does to the others: under fail-fast it stops the run, else it skips its dependents.
    static func endedUnsuccessfully(_ key: JobKey, outcome: String = "failed", _ db: Database) throws {
        let failFast =
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT fail_fast FROM runs WHERE id = ?"), arguments: [key.runID])
            ?? false
        if failFast {
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'cancelled', error = ?, lease_owner = NULL, lease_expiry = NULL
                    WHERE run_id = ? AND state IN ('blocked', 'ready', 'running')
                    """
            ).execute(arguments: ["the run stopped: job '\(key.jobID)' \(outcome)", key.runID])
        } else {
            try Self.skip(dependentsOf: key, outcome: outcome, db)
        }
    }

    /// Skips every job that depends on `key`, directly or not, naming the job and its `outcome`.
    private static func skip(dependentsOf key: JobKey, outcome: String, _ db: Database) throws {
        let dependents = try db.cachedStatement(
            sql: """
                SELECT jobs.id FROM dependencies JOIN jobs ON jobs.run_id = dependencies.run_id
                    AND jobs.id = dependencies.job_id
                WHERE dependencies.run_id = ? AND dependencies.depends_on = ? AND jobs.state = 'blocked'
                """)
        let mark = try db.cachedStatement(
            sql: "UPDATE jobs SET state = 'skipped', error = ? WHERE run_id = ? AND id = ? AND state = 'blocked'")
        // Iterative, not recursive: a long chain of dependents cannot exhaust the stack.
        var pending = [key.jobID]
        let reason = "not run: job '\(key.jobID)' \(outcome)"
        while let next = pending.popLast() {
            for id in try String.fetchAll(dependents, arguments: [key.runID, next]) {
                try mark.execute(arguments: [reason, key.runID, id])
                if db.changesCount > 0 { pending.append(id) }
            }
        }
    }

    /// Ends the run if none of its jobs is left to run: succeeded if every job did, else failed.
    static func endRunIfDone(_ runID: String, now: Int64, _ db: Database) throws -> DurableRunState? {
        // EXISTS stops at the first open job: a count here made every outcome cost as much as
        // the jobs still open, so a run quadratic in its jobs.
        let open =
            try Bool.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT EXISTS (SELECT 1 FROM jobs WHERE run_id = ? AND state IN ('blocked', 'ready', 'running'))"
                ),
                arguments: [runID]) ?? false
        guard !open else { return nil }
        let unsuccessful =
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM jobs WHERE run_id = ? AND state != 'succeeded'"),
                arguments: [runID]) ?? 0
        let state: DurableRunState = unsuccessful == 0 ? .succeeded : .failed
        // An open run ends only once it is closed.
        try db.cachedStatement(
            sql: "UPDATE runs SET state = ?, ended = ? WHERE id = ? AND state = 'running' AND NOT open_for_jobs"
        ).execute(arguments: [state.rawValue, now, runID])
        return db.changesCount > 0 ? state : nil
    }

    // MARK: - Leases and retention

    public func renewLeases(of jobs: [JobKey], worker: String, until expiry: Date) async throws {
        guard !jobs.isEmpty else { return }
        let expiry = Millis.of(expiry)
        try await write { db in
            let renew = try db.cachedStatement(
                sql: """
                    UPDATE jobs SET lease_expiry = ?
                    WHERE run_id = ? AND id = ? AND state = 'running' AND lease_owner = ?
                    """)
            for job in jobs { try renew.execute(arguments: [expiry, job.runID, job.jobID, worker]) }
        }
    }

    public func removeRuns(endedBefore date: Date) async throws -> Int {
        let cutoff = Millis.of(date)
        return try await write { db in
            // The jobs and dependencies go with their run (ON DELETE CASCADE).
            try db.cachedStatement(sql: "DELETE FROM runs WHERE state != 'running' AND ended < ?")
                .execute(arguments: [cutoff])
            return db.changesCount
        }
    }

    // MARK: - Control and queries

    /// The state of run `runID` (its raw value), read in `db`.
    ///
    /// - Throws: ``DurableError`` (unknown run) when the store at `path` has no such run.
    static func runState(of runID: String, path: String, _ db: Database) throws -> String {
        guard
            let state = try String.fetchOne(
                db.cachedStatement(sql: "SELECT state FROM runs WHERE id = ?"), arguments: [runID])
        else {
            throw DurableError.unknownRun(runID, store: path)
        }
        return state
    }

    public func cancel(runID: String, now: Date) async throws -> Bool {
        let now = Millis.of(now)
        let path = self.path
        return try await write { db in
            let state = try Self.runState(of: runID, path: path, db)
            guard state == DurableRunState.running.rawValue else { return false }
            try db.cachedStatement(
                sql: """
                    UPDATE jobs SET state = 'cancelled', error = 'cancelled', lease_owner = NULL, lease_expiry = NULL
                    WHERE run_id = ? AND state IN ('blocked', 'ready', 'running')
                    """
            ).execute(arguments: [runID])
            try db.cachedStatement(sql: "UPDATE runs SET state = 'cancelled', ended = ? WHERE id = ?").execute(
                arguments: [now, runID])
            return true
        }
    }

    public func run(_ runID: String) async throws -> DurableRunRecord? {
        try await read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT id, state, job_limit, created, ended FROM runs WHERE id = ?"),
                arguments: [runID]
            ).map { row in
                let ended: Int64? = row[4]
                return DurableRunRecord(
                    id: row[0], state: DurableRunState(rawValue: row[1]) ?? .failed, limit: row[2],
                    created: Millis.date(row[3]), ended: ended.map(Millis.date))
            }
        }
    }

    public func jobs(of runID: String) async throws -> [DurableJobRecord] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, kind, state, attempts, error, output, run_at, input FROM jobs WHERE run_id = ? ORDER BY position
                        """), arguments: [runID]
            ).map(Self.jobRecord)
        }
    }

    /// A job as a row of `SELECT id, kind, state, attempts, error, output, run_at, input` has it.
    private static func jobRecord(_ row: Row) -> DurableJobRecord {
        let state = DurableJobState(rawValue: row[2]) ?? .failed
        return DurableJobRecord(
            id: row[0], kind: row[1], input: row[7], state: state, attempts: row[3], error: row[4], output: row[5],
            runAt: state == .ready ? Millis.date(row[6]) : nil)
    }

}

extension SQLiteJobStore {
    /// `?, ?, ?` for a list of `count` values in an `IN (…)`.
    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}

/// Milliseconds since 1970, as the store keeps times.
package enum Millis {
    package static func of(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    package static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }
}
