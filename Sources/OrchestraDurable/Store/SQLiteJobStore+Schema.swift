import Foundation
import GRDB

extension SQLiteJobStore {
    /// The schema version this build writes and reads.
    static let schemaVersion = 1
    /// What the store's `orchestra_store` table says the file is.
    static let format = "orchestra-durable"

    /// Checks that `db` is an Orchestra store this version can read, or an empty database
    /// (``migrator`` then creates or migrates its schema).
    ///
    /// - Throws: ``DurableError`` with code ``DurableError/Code/foreignDatabase`` for a SQLite
    ///   database of another program, ``DurableError/Code/schemaFromNewerVersion`` for a store
    ///   written by a newer Orchestra.
    static func check(_ db: Database, path: String) throws {
        if try db.tableExists("orchestra_store") {
            let format = try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'format'")
            guard format == Self.format else {
                throw DurableError(
                    code: .foreignDatabase,
                    message:
                        "\(path) has an orchestra_store table, but not an Orchestra store's (format \(format ?? "missing"))"
                )
            }
            let version =
                try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'schema'")
                .flatMap { Int($0) } ?? 0
            guard version <= schemaVersion else {
                throw DurableError(
                    code: .schemaFromNewerVersion,
                    message:
                        "the store at \(path) has schema version \(version); this version of Orchestra reads up to \(schemaVersion)"
                )
            }
        } else {
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            guard tables.isEmpty else {
                throw DurableError(
                    code: .foreignDatabase,
                    message:
                        "\(path) is a SQLite database of another program (tables: \(tables.prefix(5).joined(separator: ", "))), not an Orchestra store"
                )
            }
        }
    }

    /// The versioned migrations, oldest first. Each sets `schema` to its version.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("orchestra-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE orchestra_store (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                    INSERT INTO orchestra_store (key, value) VALUES ('format', '\(format)'), ('schema', '1');
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
        return migrator
    }
}
