import GRDB
import OrchestraDurable

extension WorkflowState {
    /// The state file's format: its name and schema version in the `orchestra_store` table.
    static let fileFormat = SQLiteFileFormat(name: "orchestra-workflow-state", version: 3, noun: "state file")

    /// The versioned migrations, oldest first.
    ///
    /// - `workflow`: one row: the workflow's name, file and content hash, and how many runs
    ///   used the file.
    /// - `steps`: the workflow's steps in file order; for a `for_each` step, the length and
    ///   hash of its list once read.
    /// - `records`: one row per request (`item` -1 for a step's own request, the element's
    ///   index for a `for_each` element).
    /// - Version 2: `workflow.open_run`, the number of the run using the file, set as it opens
    ///   the file and cleared once it has written its last record: a file whose run never
    ///   cleared it either outlived a crash (its `-wal` is beside it) or is a copy taken during
    ///   the run (behind what the run did).
    /// - Version 3: `hosts`, each host's figures as each run ended (requests sent, its rate and
    ///   the rate its server set, 429s, pauses), one row per host and run.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("workflow-state-1") { db in
            try db.execute(
                sql: """
                    \(fileFormat.createMarkerSQL)
                    CREATE TABLE workflow (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        name TEXT,
                        file TEXT NOT NULL,
                        digest TEXT NOT NULL,
                        created INTEGER NOT NULL,
                        updated INTEGER NOT NULL,
                        runs INTEGER NOT NULL
                    );
                    CREATE TABLE steps (
                        id TEXT PRIMARY KEY NOT NULL,
                        position INTEGER NOT NULL,
                        for_each INTEGER NOT NULL,
                        total INTEGER,
                        list_digest TEXT
                    ) WITHOUT ROWID;
                    CREATE TABLE records (
                        step TEXT NOT NULL,
                        item INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        status INTEGER,
                        attempts INTEGER NOT NULL,
                        url TEXT NOT NULL,
                        error TEXT,
                        captures TEXT,
                        run INTEGER NOT NULL,
                        updated INTEGER NOT NULL,
                        PRIMARY KEY (step, item)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("workflow-state-2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE workflow ADD COLUMN open_run INTEGER;
                    UPDATE orchestra_store SET value = '2' WHERE key = 'schema';
                    """)
        }
        migrator.registerMigration("workflow-state-3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE hosts (
                        host TEXT NOT NULL,
                        run INTEGER NOT NULL,
                        requests INTEGER NOT NULL,
                        rate TEXT,
                        effective_rate TEXT,
                        too_many_requests INTEGER NOT NULL,
                        pauses INTEGER NOT NULL,
                        PRIMARY KEY (host, run)
                    ) WITHOUT ROWID;
                    UPDATE orchestra_store SET value = '3' WHERE key = 'schema';
                    """)
        }
        return migrator
    }
}
