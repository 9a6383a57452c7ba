import OrchestraDurable
import PostgresNIO

extension PostgresJobStore {
    /// The schema version this build writes and reads.
    static let schemaVersion = 9
    /// What the schema's `orchestra_store` table says it holds.
    static let format = "orchestra-durable"

    /// Creates the store's schema and tables, or migrates them to this version; does nothing if
    /// they are up to date. Safe to call from many processes at once (an advisory lock
    /// serializes them).
    ///
    /// - Throws: `DurableError` with code `DurableError/Code/foreignDatabase` if the schema
    ///   holds tables of another program, `DurableError/Code/schemaFromNewerVersion` if a
    ///   newer Orchestra wrote it, `DurableError/Code/connectionFailed` if the server cannot
    ///   be reached or refuses the credentials.
    public func migrate() async throws {
        let schema = self.schema
        try await transaction(timeout: Self.bulkOperationTimeout) { [self] connection in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext(\(schema + ".migrate")))", logger: logger)
            try await connection.query("CREATE SCHEMA IF NOT EXISTS \(unescaped: schema)", logger: logger)
            let version = try await version(connection) ?? 0
            for (index, statements) in migrations.enumerated() where index + 1 > version {
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        }
    }

    /// Checks, changing nothing, that the schema holds an Orchestra store this version reads:
    /// for a command that only reads a store (`orchestra status`).
    ///
    /// - Throws: `DurableError` with code `DurableError/Code/noStore` if there is no store
    ///   in the schema (nothing was ever submitted there), or the errors of ``migrate()``.
    public func check() async throws {
        let schema = self.schema
        let location = self.location
        try await read { [self] connection in
            guard try await version(connection) != nil else {
                throw DurableError(
                    code: .noStore,
                    message:
                        "there is no Orchestra store in schema '\(schema)' at \(location): no run was ever submitted there (check --schema)"
                )
            }
        }
    }

    /// The version of the store in the schema, `nil` if the schema holds no table.
    ///
    /// - Throws: `DurableError` (`foreignDatabase`, `schemaFromNewerVersion`).
    private func version(_ connection: PostgresConnection) async throws -> Int? {
        let schema = self.schema
        let location = self.location
        var tables: [String] = []
        for try await name in try await connection.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = \(schema) ORDER BY 1",
            logger: logger
        ).decode(String.self) {
            tables.append(name)
        }
        var version: Int?
        if tables.contains("orchestra_store") {
            var values: [String: String] = [:]
            for try await (key, value) in try await connection.query(
                "SELECT key, value FROM \(unescaped: table("orchestra_store"))", logger: logger
            ).decode((String, String).self) {
                values[key] = value
            }
            guard values["format"] == Self.format else {
                throw DurableError(
                    code: .foreignDatabase,
                    message:
                        "the schema '\(schema)' at \(location) has an orchestra_store table, but not an Orchestra store's (format \(values["format"] ?? "missing"))"
                )
            }
            let stored = values["schema"].flatMap { Int($0) } ?? 0
            guard stored <= Self.schemaVersion else {
                throw DurableError(
                    code: .schemaFromNewerVersion,
                    message:
                        "the store in schema '\(schema)' at \(location) has schema version \(stored); this version of Orchestra reads up to \(Self.schemaVersion)"
                )
            }
            version = stored
        } else if !tables.isEmpty {
            throw DurableError(
                code: .foreignDatabase,
                message:
                    "the schema '\(schema)' at \(location) holds tables of another program (\(tables.prefix(5).joined(separator: ", "))), not an Orchestra store"
            )
        }
        return version
    }

    /// The versioned migrations, oldest first: each is the SQL statements that bring the
    /// schema from the previous version to its own.
    var migrations: [[String]] {
        [
            [
                "CREATE TABLE \(table("orchestra_store")) (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "INSERT INTO \(table("orchestra_store")) (key, value) VALUES ('format', '\(Self.format)'), ('schema', '1')",
                """
                CREATE TABLE \(table("runs")) (
                    id TEXT PRIMARY KEY,
                    state TEXT NOT NULL,
                    job_limit INTEGER NOT NULL,
                    fail_fast BOOLEAN NOT NULL,
                    fingerprint TEXT NOT NULL,
                    created BIGINT NOT NULL,
                    ended BIGINT
                )
                """,
                "CREATE INDEX runs_by_state ON \(table("runs")) (state)",
                """
                CREATE TABLE \(table("jobs")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    id TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    input BYTEA NOT NULL,
                    state TEXT NOT NULL,
                    waiting_on INTEGER NOT NULL,
                    priority INTEGER NOT NULL,
                    critical_path DOUBLE PRECISION NOT NULL,
                    timeout_ns BIGINT,
                    max_attempts INTEGER NOT NULL,
                    initial_delay_ns BIGINT NOT NULL,
                    multiplier DOUBLE PRECISION NOT NULL,
                    max_delay_ns BIGINT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    run_at BIGINT NOT NULL,
                    lease_owner TEXT,
                    lease_expiry BIGINT,
                    output BYTEA,
                    error TEXT,
                    PRIMARY KEY (run_id, id)
                )
                """,
                // Ready jobs in claim order; running jobs by run (the limits) and by lease expiry.
                """
                CREATE INDEX jobs_claim ON \(table("jobs")) (priority DESC, critical_path DESC, run_at, position)
                    WHERE state = 'ready'
                """,
                "CREATE INDEX jobs_running ON \(table("jobs")) (run_id, lease_expiry) WHERE state = 'running'",
                "CREATE INDEX jobs_open ON \(table("jobs")) (run_id) WHERE state IN ('blocked', 'ready', 'running')",
                """
                CREATE TABLE \(table("dependencies")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    job_id TEXT NOT NULL,
                    depends_on TEXT NOT NULL,
                    PRIMARY KEY (run_id, depends_on, job_id)
                )
                """,
                "CREATE INDEX dependencies_of_job ON \(table("dependencies")) (run_id, job_id)",
                """
                CREATE TABLE \(table("run_resources")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    resource_limit INTEGER NOT NULL,
                    PRIMARY KEY (run_id, name)
                )
                """,
                """
                CREATE TABLE \(table("job_resources")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    job_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    PRIMARY KEY (run_id, job_id, name)
                )
                """,
            ],
            // Open runs: jobs appended until the run is closed.
            [
                "ALTER TABLE \(table("runs")) ADD COLUMN open_for_jobs BOOLEAN NOT NULL DEFAULT false",
                // The position of the next job appended: no scan of the run's jobs for it.
                "ALTER TABLE \(table("runs")) ADD COLUMN next_position BIGINT NOT NULL DEFAULT 0",
                "UPDATE \(table("orchestra_store")) SET value = '2' WHERE key = 'schema'",
            ],
            // At-most-once jobs (DurableJobOptions.atMostOnce): uncertain, not ready again, when
            // their lease is lost. Jobs stored before it run at least once, as they did. Whether a
            // run was opened for jobs (`opened`): resending its uncertain jobs opens it again.
            [
                "ALTER TABLE \(table("jobs")) ADD COLUMN at_most_once BOOLEAN NOT NULL DEFAULT false",
                "ALTER TABLE \(table("runs")) ADD COLUMN opened BOOLEAN NOT NULL DEFAULT false",
                "UPDATE \(table("runs")) SET opened = open_for_jobs",
                "UPDATE \(table("orchestra_store")) SET value = '3' WHERE key = 'schema'",
            ],
            // No planner statistics for `run_id`: a run being worked on is new, so absent from
            // them, and PostgreSQL estimated its rows at 1 (every run it knew covering the whole
            // table) and looked its jobs up by scanning the whole run and filtering the ids
            // (`run_id = $1 AND id = ANY($2)`, the release of dependents, the claim's outputs of
            // dependencies): each outcome read and claim cost a scan of the run, the run the
            // square of its size (10,000 requests: 18 million rows read). Without statistics,
            // the estimate is a fraction of the table, and the lookups use the whole key. The
            // type change to the same type drops the statistics gathered so far (no rewrite).
            ["jobs", "dependencies", "job_resources"].map { name in
                "ALTER TABLE \(table(name)) ALTER COLUMN run_id SET STATISTICS 0, ALTER COLUMN run_id TYPE TEXT"
            } + ["UPDATE \(table("orchestra_store")) SET value = '4' WHERE key = 'schema'"],
            // Rates per resource (DurableSubmission.resourceRates) and pauses (pauseResource):
            // each resource's pace, its times in nanoseconds since 1970, read and moved on by the
            // claims under their lock. A resource with a pause only has no rate (rate_count NULL).
            // Runs stored before it have none. (IF NOT EXISTS: a store whose version was set back
            // by hand, as a test of the previous step does, migrates again.)
            [
                """
                CREATE TABLE IF NOT EXISTS \(table("run_rates")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    rate_count BIGINT,
                    rate_interval_ns BIGINT,
                    burst BIGINT NOT NULL DEFAULT 1,
                    tat_ns BIGINT NOT NULL DEFAULT 0,
                    paused_until_ns BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (run_id, name)
                )
                """,
                "UPDATE \(table("orchestra_store")) SET value = '5' WHERE key = 'schema'",
            ],
            // Each host's figures as the coordinators of a run saw them (recordHosts): requests,
            // the rate configured and the one its server set, 429s and pauses, added up over the
            // coordinators that ended. (IF NOT EXISTS: as above.)
            [
                """
                CREATE TABLE IF NOT EXISTS \(table("run_hosts")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    host TEXT NOT NULL,
                    requests BIGINT NOT NULL,
                    rate TEXT,
                    effective_rate TEXT,
                    too_many_requests BIGINT NOT NULL,
                    pauses BIGINT NOT NULL,
                    PRIMARY KEY (run_id, host)
                )
                """,
                "UPDATE \(table("orchestra_store")) SET value = '6' WHERE key = 'schema'",
            ],
            // The claim that marked a running job (a token per call): a try of a claim that
            // follows one given up finds what that one claimed. (IF NOT EXISTS: as above.)
            [
                "ALTER TABLE \(table("jobs")) ADD COLUMN IF NOT EXISTS claim_token TEXT",
                "UPDATE \(table("orchestra_store")) SET value = '7' WHERE key = 'schema'",
            ],
            // Each step's figures as the run's coordinator saw them (recordSteps): its requests
            // that succeeded, failed and may have been sent, and a `for_each` list's length,
            // in file order (`position`). (IF NOT EXISTS: as above.)
            [
                """
                CREATE TABLE IF NOT EXISTS \(table("run_steps")) (
                    run_id TEXT NOT NULL REFERENCES \(table("runs")) (id) ON DELETE CASCADE,
                    position BIGINT NOT NULL,
                    step TEXT NOT NULL,
                    for_each BOOLEAN NOT NULL,
                    total BIGINT,
                    succeeded BIGINT NOT NULL,
                    failed BIGINT NOT NULL,
                    maybe_sent BIGINT NOT NULL,
                    PRIMARY KEY (run_id, position)
                )
                """,
                "UPDATE \(table("orchestra_store")) SET value = '8' WHERE key = 'schema'",
            ],
            // Whether a step's `when:` skipped it (nothing to send). (IF NOT EXISTS: as above.)
            [
                "ALTER TABLE \(table("run_steps")) ADD COLUMN IF NOT EXISTS skipped BOOLEAN NOT NULL DEFAULT false",
                "UPDATE \(table("orchestra_store")) SET value = '9' WHERE key = 'schema'",
            ],
        ]
    }
}
