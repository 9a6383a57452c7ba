import Foundation
import GRDB

extension SQLiteJobStore {
    /// The store's file format: its name and schema version in the `orchestra_store` table.
    static let fileFormat = SQLiteFileFormat(name: "orchestra-durable", version: 4, noun: "store")

    /// The versioned migrations, oldest first. Each sets `schema` to its version.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("orchestra-1") { db in
            try db.execute(
                sql: """
                    \(fileFormat.createMarkerSQL)
                    CREATE TABLE runs (
                        id TEXT PRIMARY KEY NOT NULL,
                        state TEXT NOT NULL,
                        job_limit INTEGER NOT NULL,
                        fail_fast INTEGER NOT NULL,
                        fingerprint TEXT NOT NULL,
                        created INTEGER NOT NULL,
                        ended INTEGER
                    );
                    CREATE INDEX runs_by_state ON runs (state);
                    CREATE TABLE jobs (
                        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                        id TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        input BLOB NOT NULL,
                        state TEXT NOT NULL,
                        waiting_on INTEGER NOT NULL,
                        priority INTEGER NOT NULL,
                        critical_path REAL NOT NULL,
                        timeout_ns INTEGER,
                        max_attempts INTEGER NOT NULL,
                        initial_delay_ns INTEGER NOT NULL,
                        multiplier REAL NOT NULL,
                        max_delay_ns INTEGER NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        run_at INTEGER NOT NULL,
                        lease_owner TEXT,
                        lease_expiry INTEGER,
                        output BLOB,
                        error TEXT,
                        PRIMARY KEY (run_id, id)
                    );
                    CREATE INDEX jobs_claim ON jobs (state, priority DESC, critical_path DESC, run_at, position);
                    CREATE INDEX jobs_due ON jobs (state, run_at);
                    CREATE INDEX jobs_by_run_state ON jobs (run_id, state);
                    CREATE TABLE dependencies (
                        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                        job_id TEXT NOT NULL,
                        depends_on TEXT NOT NULL,
                        PRIMARY KEY (run_id, depends_on, job_id)
                    );
                    CREATE INDEX dependencies_of_job ON dependencies (run_id, job_id);
                    CREATE TABLE run_resources (
                        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        resource_limit INTEGER NOT NULL,
                        PRIMARY KEY (run_id, name)
                    );
                    CREATE TABLE job_resources (
                        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                        job_id TEXT NOT NULL,
                        name TEXT NOT NULL,
                        PRIMARY KEY (run_id, job_id, name)
                    );
                    """)
        }
        // Open runs: jobs appended until the run is closed.
        migrator.registerMigration("orchestra-2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE runs ADD COLUMN open_for_jobs INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE runs ADD COLUMN next_position INTEGER NOT NULL DEFAULT 0;
                    UPDATE orchestra_store SET value = '2' WHERE key = 'schema';
                    """)
        }
        // At-most-once jobs (DurableJobOptions.atMostOnce): uncertain, not ready again, when
        // their lease is lost. Jobs stored before it run at least once, as they did. Whether a
        // run was opened for jobs (`opened`): resending its uncertain jobs opens it again.
        migrator.registerMigration("orchestra-3") { db in
            try db.execute(
                sql: """
                    ALTER TABLE jobs ADD COLUMN at_most_once INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE runs ADD COLUMN opened INTEGER NOT NULL DEFAULT 0;
                    UPDATE runs SET opened = open_for_jobs;
                    UPDATE orchestra_store SET value = '3' WHERE key = 'schema';
                    """)
        }
        // Rates per resource (DurableSubmission.resourceRates) and pauses (pauseResource): each
        // resource's pace, its times in nanoseconds since 1970. A resource with a pause only has
        // no rate (rate_count NULL). Runs stored before it have none.
        migrator.registerMigration("orchestra-4") { db in
            try db.execute(
                sql: """
                    CREATE TABLE run_rates (
                        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        rate_count INTEGER,
                        rate_interval_ns INTEGER,
                        burst INTEGER NOT NULL DEFAULT 1,
                        tat_ns INTEGER NOT NULL DEFAULT 0,
                        paused_until_ns INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (run_id, name)
                    );
                    UPDATE orchestra_store SET value = '4' WHERE key = 'schema';
                    """)
        }
        return migrator
    }
}
