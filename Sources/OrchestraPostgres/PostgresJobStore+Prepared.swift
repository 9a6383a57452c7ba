import Foundation
import OrchestraDurable
import PostgresNIO

/// The statements of a worker's claims and outcomes, which it sends for every job, and of a
/// coordinator's reads of outcomes: prepared once per connection (parsed once, and planned once
/// when one plan fits every use), not parsed and planned at each use.
///
/// Sent as other statements are (unnamed, with their values), PostgreSQL parses and plans each
/// one at every use: most of a chain link's time on the server (BENCHMARKS.md, "Where a link's
/// time goes now"). A prepared statement's SQL is fixed, so it names its tables without their
/// schema and reads them from the connection's `search_path`, which the store sets to its
/// schema (``PostgresJobStore/preparing(_:)``, which also has the store's connections plan
/// again as their tables grow). PostgreSQL plans a prepared statement again when the
/// `search_path` it was planned with changes, so a client shared by stores of several schemas
/// stays correct. Every value is cast in the SQL, so its type is the one PostgresNIO sends.
///
/// PostgresNIO remembers a statement whose preparation failed as failed for the rest of its
/// connection: these are first used after ``PostgresJobStore/migrate()`` (or `check()`) made
/// the tables, and never in a transaction that an earlier error aborted (the store's
/// transactions end at their first error).
enum PreparedStatements {
    /// `PostgresJobStore.recordAttempts`: each outcome, if its attempt is still the job's current one.
    struct RecordAttempts: StoreStatement {
        static let sql = """
            UPDATE jobs j SET state = o.state,
                output = CASE WHEN o.state = 'succeeded' THEN o.output END,
                error = CASE WHEN o.has_error THEN o.error END,
                run_at = CASE WHEN o.run_at >= 0 THEN o.run_at ELSE j.run_at END,
                lease_owner = NULL, lease_expiry = NULL
            FROM unnest($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::TEXT[], $5::BYTEA[], $6::TEXT[], $7::BOOLEAN[],
                $8::BIGINT[]) AS o (run_id, id, attempt, state, output, error, has_error, run_at)
            WHERE j.run_id = o.run_id AND j.id = o.id AND j.state = 'running' AND j.attempts = o.attempt
            RETURNING j.run_id, j.id
            """
        typealias Row = (String, String)
        let bindings: PostgresBindings

        init(
            runs: [String], ids: [String], attempts: [Int], states: [String], outputs: [ByteBuffer],
            errors: [String], hasError: [Bool], runAts: [Int64]
        ) {
            bindings = Self.bind(runs, ids, attempts, states, outputs, errors, hasError, runAts)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `PostgresJobStore.releaseDependents`: the dependents of succeeded jobs, ready once none
    /// is left to wait on.
    struct ReleaseDependents: StoreStatement {
        static let sql = """
            UPDATE jobs j SET waiting_on = j.waiting_on - d.done,
                state = CASE WHEN j.waiting_on = d.done AND j.state = 'blocked' THEN 'ready' ELSE j.state END,
                run_at = CASE WHEN j.waiting_on = d.done AND j.state = 'blocked' THEN $3::BIGINT ELSE j.run_at END
            FROM (SELECT job_id, COUNT(*)::INTEGER AS done FROM dependencies
                WHERE run_id = $1::TEXT AND depends_on = ANY($2::TEXT[]) GROUP BY job_id) d
            WHERE j.run_id = $1::TEXT AND j.id = d.job_id
            RETURNING j.state
            """
        typealias Row = String
        let bindings: PostgresBindings

        init(runID: String, ids: [String], now: Int64) {
            bindings = Self.bind(runID, ids, now)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `PostgresJobStore.rooms`: expired leases of jobs that may run again made ready, and each
    /// running run's limit and running jobs.
    struct Rooms: StoreStatement {
        static let sql = """
            WITH reaped AS (
                UPDATE jobs SET state = 'ready', run_at = lease_expiry, lease_owner = NULL, lease_expiry = NULL
                WHERE state = 'running' AND lease_expiry <= $1::BIGINT AND NOT at_most_once
                RETURNING run_id
            )
            SELECT r.id, r.job_limit,
                ((SELECT COUNT(*) FROM jobs j WHERE j.run_id = r.id AND j.state = 'running')
                    - (SELECT COUNT(*) FROM reaped WHERE reaped.run_id = r.id))::INTEGER,
                EXISTS (SELECT 1 FROM run_resources rr WHERE rr.run_id = r.id)
                    OR EXISTS (SELECT 1 FROM run_rates p WHERE p.run_id = r.id),
                x.lost
            FROM (SELECT EXISTS (SELECT 1 FROM jobs
                    WHERE state = 'running' AND lease_expiry <= $1::BIGINT AND at_most_once) AS lost) x
            LEFT JOIN runs r ON r.state = 'running'
            """
        typealias Row = (String?, Int?, Int?, Bool?, Bool)
        let bindings: PostgresBindings

        init(now: Int64) {
            bindings = Self.bind(now)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// A page of a claim: the ready jobs in claim order, of the runs with room, using no full
    /// resource; locked, those another transaction holds skipped.
    struct ClaimPage: StoreStatement {
        static let sql = """
            SELECT j.run_id, j.id, j.kind, j.priority, j.critical_path, j.run_at, j.position, j.input,
                j.attempts, j.timeout_ns, j.max_attempts, j.initial_delay_ns, j.multiplier, j.max_delay_ns,
                CASE WHEN j.run_id = ANY($1::TEXT[]) THEN ARRAY(
                    SELECT name FROM job_resources r WHERE r.run_id = j.run_id AND r.job_id = j.id) ELSE '{}' END
            FROM jobs j
            WHERE j.state = 'ready' AND j.run_at <= $2::BIGINT AND j.kind = ANY($3::TEXT[])
                AND j.run_id = ANY($4::TEXT[])
                AND NOT EXISTS (SELECT 1 FROM job_resources r
                    JOIN unnest($5::TEXT[], $6::TEXT[]) AS f (run_id, name) ON f.run_id = r.run_id AND f.name = r.name
                    WHERE r.run_id = j.run_id AND r.job_id = j.id)
            ORDER BY \(ClaimPlanner.orderBy("j."))
            LIMIT $7::BIGINT
            FOR UPDATE OF j SKIP LOCKED
            """
        typealias Row = (
            String, String, String, Int, Double, Int64, Int, Data, Int, Int64?, Int, Int64, Double, Int64, [String]
        )
        let bindings: PostgresBindings

        init(
            runsWithResources: [String], now: Int64, kinds: [String], runs: [String],
            fullResources: [ClaimPlanner.Resource], size: Int
        ) {
            bindings = Self.bind(
                runsWithResources, now, kinds, runs, fullResources.map(\.runID), fullResources.map(\.name), size)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `PostgresJobStore.withDependencyOutputs`: jobs marked running (if `marking` says under which lease) and the outputs
    /// of their dependencies.
    struct DependencyOutputs: StoreStatement {
        static let sql = """
            WITH marked AS (
                UPDATE jobs SET state = 'running', attempts = attempts + 1,
                    lease_owner = $3::TEXT, lease_expiry = $4::BIGINT, claim_token = $5::TEXT
                WHERE $6::BOOLEAN AND run_id = $1::TEXT AND id = ANY($2::TEXT[])
                RETURNING id
            )
            SELECT d.job_id, d.depends_on, j.output FROM dependencies d
            JOIN jobs j ON j.run_id = d.run_id AND j.id = d.depends_on
            WHERE d.run_id = $1::TEXT AND d.job_id = ANY($2::TEXT[])
            """
        typealias Row = (String, String, Data?)
        let bindings: PostgresBindings

        init(runID: String, ids: [String], marking: (worker: String, expiry: Int64, token: String)?) {
            bindings = Self.bind(
                runID, ids, marking?.worker ?? "", marking?.expiry ?? 0, marking?.token ?? "", marking != nil)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `PostgresJobStore.endRunIfDone`: whether the run has a job left to run.
    struct RunHasOpenJobs: RunFlagStatement {
        static let sql = """
            SELECT EXISTS (SELECT 1 FROM jobs WHERE run_id = $1::TEXT AND state IN ('blocked', 'ready', 'running'))
            """
        let bindings: PostgresBindings
    }

    /// The lock of a run whose outcomes a transaction records, and whether it takes new jobs:
    /// one at a time, and none while the run's jobs are appended (the outcomes may end the
    /// run). `FOR NO KEY UPDATE`, not `FOR UPDATE`: a transaction that holds ``LockOpenRun``
    /// takes it when the run turns out closed, beside other holders of that one.
    struct LockRun: RunFlagStatement {
        static let sql = "SELECT open_for_jobs FROM runs WHERE id = $1::TEXT FOR NO KEY UPDATE"
        let bindings: PostgresBindings
    }

    /// The lock of a run open for jobs whose outcomes a transaction records, and whether it
    /// still is (`PostgresJobStore.lockRunForOutcomes`): `FOR KEY SHARE`, which appends (an
    /// `UPDATE` of the run's row) and other outcomes of the run do not wait for, and a close
    /// (`FOR UPDATE`) does. An open run cannot end, so its outcomes need no more.
    struct LockOpenRun: RunFlagStatement {
        static let sql = "SELECT open_for_jobs FROM runs WHERE id = $1::TEXT FOR KEY SHARE"
        let bindings: PostgresBindings
    }

    /// Jobs of a run by id, in the order they were added: each looked up by its whole key, in a
    /// subquery run once per id (`OFFSET 0` keeps PostgreSQL from turning it into a join). As
    /// `run_id = $1 AND id = ANY($2)`, it read every job of the run and kept those asked for (it
    /// estimated a new run at a row or a few), so each outcome read cost a scan of the run.
    struct JobsByID: StoreStatement {
        static let sql = """
            SELECT j.id, j.kind, j.state, j.attempts, j.error, j.output, j.run_at, j.input
            FROM unnest($2::TEXT[]) AS k (id)
            CROSS JOIN LATERAL (
                SELECT id, kind, state, attempts, error, output, run_at, input, position
                FROM jobs WHERE run_id = $1::TEXT AND id = k.id OFFSET 0
            ) j
            ORDER BY j.position
            """
        typealias Row = PostgresJobStore.JobRow
        let bindings: PostgresBindings

        init(runID: String, ids: [String]) {
            bindings = Self.bind(runID, ids)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

/// A prepared statement of the store, its values bound when it is made.
/// A statement of one run (its id, `$1`) that reads one flag.
protocol RunFlagStatement: StoreStatement where Row == Bool {
    init(bindings: PostgresBindings)
}

extension RunFlagStatement {
    init(runID: String) {
        self.init(bindings: Self.bind(runID))
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}

protocol StoreStatement: PostgresPreparedStatement {
    var bindings: PostgresBindings { get }
}

extension StoreStatement {
    func makeBindings() -> PostgresBindings { bindings }

    /// The values of a statement, in the order of its parameters.
    static func bind<each Value: PostgresDynamicTypeEncodable>(_ values: repeat each Value) -> PostgresBindings {
        var bindings = PostgresBindings()
        repeat bindings.append(each values)
        return bindings
    }
}
