import Foundation
import OrchestraDurable
import PostgresNIO

extension PostgresJobStore {
    // MARK: - Leases and retention

    /// Sets the expiry of the leases `worker` still holds on `jobs`. (Giving them back:
    /// `PostgresJobStore+AtMostOnce.swift`.)
    public func renewLeases(of jobs: [JobKey], worker: String, until expiry: Date) async throws {
        guard !jobs.isEmpty else { return }
        let expiry = Millis.of(expiry)
        try await transaction { [self] connection in
            for (runID, ids) in Self.idsByRun(jobs) {
                try await connection.query(
                    """
                    UPDATE \(unescaped: table("jobs")) SET lease_expiry = \(expiry)
                    WHERE run_id = \(runID) AND id = ANY(\(ids)) AND state = 'running' AND lease_owner = \(worker)
                    """, logger: logger)
            }
        }
    }

    public func removeRuns(endedBefore date: Date) async throws -> Int {
        let cutoff = Millis.of(date)
        return try await transaction(timeout: Self.bulkOperationTimeout) { [self] connection in
            // The jobs, dependencies and resources go with their run (ON DELETE CASCADE).
            var removed = 0
            for try await _ in try await connection.query(
                "DELETE FROM \(unescaped: table("runs")) WHERE state != 'running' AND ended < \(cutoff) RETURNING id",
                logger: logger
            ).decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

    // MARK: - Control and queries

    public func cancel(runID: String, now: Date) async throws -> Bool {
        let now = Millis.of(now)
        let location = self.location
        return try await transaction { [self] connection in
            let state = try await connection.query(
                "SELECT state FROM \(unescaped: table("runs")) WHERE id = \(runID) FOR UPDATE", logger: logger
            ).decode(String.self).onlyRow()
            guard let state else {
                throw DurableError.unknownRun(runID, store: location)
            }
            guard state == DurableRunState.running.rawValue else { return false }
            // A worker running one of its jobs finds its outcome refused: the job is no longer
            // running under its lease.
            try await connection.query(
                """
                UPDATE \(unescaped: table("jobs")) SET state = 'cancelled', error = 'cancelled', lease_owner = NULL,
                    lease_expiry = NULL
                WHERE run_id = \(runID) AND state IN ('blocked', 'ready', 'running')
                """, logger: logger)
            try await connection.query(
                "UPDATE \(unescaped: table("runs")) SET state = 'cancelled', ended = \(now) WHERE id = \(runID)",
                logger: logger)
            return true
        }
    }

    public func run(_ runID: String) async throws -> DurableRunRecord? {
        try await read { [self] connection in
            try await connection.query(
                "SELECT id, state, job_limit, created, ended FROM \(unescaped: table("runs")) WHERE id = \(runID)",
                logger: logger
            ).decode(RunRow.self).map(Self.runRecord).onlyRow()
        }
    }

    /// A row of `SELECT id, state, job_limit, created, ended FROM runs`.
    typealias RunRow = (String, String, Int, Int64, Int64?)

    /// The run a ``RunRow`` holds.
    static func runRecord(_ row: RunRow) -> DurableRunRecord {
        let (id, state, limit, created, ended) = row
        return DurableRunRecord(
            id: id, state: DurableRunState(rawValue: state) ?? .failed, limit: limit, created: Millis.date(created),
            ended: ended.map(Millis.date))
    }

    public func jobs(of runID: String) async throws -> [DurableJobRecord] {
        try await jobRecords(of: runID, ids: nil)
    }

    public func jobs(of runID: String, ids: [String]) async throws -> [DurableJobRecord] {
        ids.isEmpty ? [] : try await jobRecords(of: runID, ids: Array(Set(ids)))
    }

    /// The run's jobs in the order they were added: all of them, or those with `ids`.
    private func jobRecords(of runID: String, ids: [String]?) async throws -> [DurableJobRecord] {
        try await read { [self] connection in
            var records: [DurableJobRecord] = []
            // Jobs by id (a coordinator's outcome reads, prepared): `PreparedStatements.JobsByID`.
            let rows: AsyncThrowingMapSequence<PostgresRowSequence, JobRow> =
                if let ids {
                    try await connection.execute(PreparedStatements.JobsByID(runID: runID, ids: ids), logger: logger)
                } else {
                    try await connection.query(
                        """
                        SELECT id, kind, state, attempts, error, output, run_at, input FROM \(unescaped: table("jobs"))
                        WHERE run_id = \(runID) ORDER BY position
                        """, logger: logger
                    ).decode(JobRow.self)
                }
            for try await (id, kind, state, attempts, error, output, runAt, input) in rows {
                let state = DurableJobState(rawValue: state) ?? .failed
                records.append(
                    DurableJobRecord(
                        id: id, kind: kind, input: input, state: state, attempts: attempts, error: error,
                        output: output, runAt: state == .ready ? Millis.date(runAt) : nil))
            }
            return records
        }
    }

    /// A row of the job columns ``jobs(of:)`` reads.
    typealias JobRow = (String, String, String, Int, String?, Data?, Int64, Data)

    /// The most recent runs, newest first, with how many of their jobs stand where and how many
    /// workers run them: what `orchestra status` shows.
    ///
    /// - Parameters:
    ///   - id: Only the run with this id (none if there is no such run).
    ///   - limit: At most this many runs.
    public func runSummaries(id: String? = nil, limit: Int = 50) async throws -> [DurableRunSummary] {
        try await read { [self] connection in
            var runs: [DurableRunRecord] = []
            for try await run in try await connection.query(
                """
                SELECT id, state, job_limit, created, ended FROM \(unescaped: table("runs"))
                WHERE \(id)::TEXT IS NULL OR id = \(id) ORDER BY created DESC, id LIMIT \(limit)
                """, logger: logger
            ).decode(RunRow.self).map(Self.runRecord) {
                runs.append(run)
            }
            var counts: [String: [DurableJobState: Int]] = [:]
            var workers: [String: Int] = [:]
            for try await (runID, state, count, owners) in try await connection.query(
                """
                SELECT run_id, state, COUNT(*)::BIGINT, COUNT(DISTINCT lease_owner)::BIGINT
                FROM \(unescaped: table("jobs")) WHERE run_id = ANY(\(runs.map(\.id))) GROUP BY run_id, state
                """, logger: logger
            ).decode((String, String, Int, Int).self) {
                counts[runID, default: [:]][DurableJobState(rawValue: state) ?? .failed, default: 0] += count
                workers[runID, default: 0] += owners
            }
            return runs.map { DurableRunSummary(run: $0, jobs: counts[$0.id] ?? [:], workers: workers[$0.id] ?? 0) }
        }
    }
}
