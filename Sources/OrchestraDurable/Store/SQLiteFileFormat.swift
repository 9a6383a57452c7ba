import Foundation
import GRDB

/// What kind of Orchestra file a SQLite database is (its `orchestra_store` table names the
/// format and the schema version), and opening one: WAL journal, the format checked before
/// anything is written, then the migrations. The job store and the workflow state file of
/// `orchestra run --state` share it, so both refuse the same bad files with the same errors.
package struct SQLiteFileFormat: Sendable {
    /// The `format` value of the `orchestra_store` table.
    package let name: String
    /// The schema version this build writes and reads.
    package let version: Int
    /// What messages call such a file: `store`, `state file`.
    package let noun: String

    package init(name: String, version: Int, noun: String) {
        self.name = name
        self.version = version
        self.noun = noun
    }

    /// Opens (or, unless `readOnly`, creates) the file at `path`, checks it and, unless
    /// `readOnly`, runs the migrations; a read-only caller checks first that the file exists.
    /// A lock held by another connection is waited for, up to 5 seconds.
    /// New files are created readable by their owner only (they may hold captured values).
    ///
    /// - Throws: ``DurableError`` with code ``DurableError/Code/notADatabase``,
    ///   ``DurableError/Code/foreignDatabase``, ``DurableError/Code/schemaFromNewerVersion`` or
    ///   ``DurableError/Code/storeFailed``, naming the file.
    package func open(
        path: String, readOnly: Bool = false, migrator: DatabaseMigrator
    ) throws(DurableError)
        -> DatabaseQueue
    {
        var configuration = Configuration()
        configuration.readonly = readOnly
        // A lock another connection holds for a moment (the checkpoint of the last connection
        // of a run that just ended, a writer of another process) is waited for, not an error:
        // without it, a state file opened as the previous run's connection closed failed with
        // "database is locked" (seen under ThreadSanitizer).
        configuration.busyMode = .timeout(5)
        if !readOnly {
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
            }
        }
        do {
            if !readOnly, !FileManager.default.fileExists(atPath: path) {
                // Created here, so that its mode is the owner's only from the start.
                let descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                if descriptor >= 0 { close(descriptor) }
            }
            let database = try DatabaseQueue(path: path, configuration: configuration)
            try database.read { db in try check(db, path: path) }
            if !readOnly { try migrator.migrate(database) }
            return database
        } catch {
            throw mapped(error, path: path)
        }
    }

    /// Checks that `db` is a file of this format that this version can read, or an empty
    /// database (the migrations then create its schema).
    ///
    /// - Throws: ``DurableError`` with code ``DurableError/Code/foreignDatabase`` for a SQLite
    ///   database of another program (or another Orchestra format),
    ///   ``DurableError/Code/schemaFromNewerVersion`` for one written by a newer Orchestra.
    package func check(_ db: Database, path: String) throws {
        if try db.tableExists("orchestra_store") {
            let format = try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'format'")
            guard format == name else {
                throw DurableError(
                    code: .foreignDatabase,
                    message:
                        "\(path) is an Orchestra file of another kind (format \(format ?? "missing")), not an Orchestra \(noun)"
                )
            }
            let stored =
                try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'schema'")
                .flatMap { Int($0) } ?? 0
            guard stored <= version else {
                throw DurableError(
                    code: .schemaFromNewerVersion,
                    message:
                        "the \(noun) at \(path) has schema version \(stored); this version of Orchestra reads up to \(version)"
                )
            }
        } else {
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            guard tables.isEmpty else {
                throw DurableError(
                    code: .foreignDatabase,
                    message:
                        "\(path) is a SQLite database of another program (tables: \(tables.prefix(5).joined(separator: ", "))), not an Orchestra \(noun)"
                )
            }
        }
    }

    /// The SQL that creates the `orchestra_store` table of this format, for the first migration.
    package var createMarkerSQL: String {
        """
        CREATE TABLE orchestra_store (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
        INSERT INTO orchestra_store (key, value) VALUES ('format', '\(name)'), ('schema', '\(version)');
        """
    }

    /// A database error as a ``DurableError`` naming the file.
    package func mapped(_ error: any Error, path: String) -> DurableError {
        if let error = error as? DurableError { return error }
        if let error = error as? DatabaseError {
            if error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_CORRUPT {
                return DurableError(
                    code: .notADatabase,
                    message: "\(path) is not a SQLite database, or it is damaged: \(error.message ?? "\(error)")",
                    underlying: error)
            }
            return DurableError(
                code: .storeFailed, message: "the \(noun) at \(path) failed: \(error.message ?? "\(error)")",
                underlying: error)
        }
        return DurableError(code: .storeFailed, message: "the \(noun) at \(path) failed: \(error)", underlying: error)
    }
}

extension DatabaseQueue {
    /// Runs `body` in a read transaction (one snapshot of the file) on a connection that also
    /// writes: the reads of the job store and of the state file.
    ///
    /// Not GRDB's `read`: on a writable `DatabaseQueue` it enforces read-only with
    /// `PRAGMA query_only` on and off around `body`, and a flag pragma expires every prepared
    /// statement of the connection, so each read made every cached statement be compiled again
    /// (with GRDB's authorizer called for each column): a tenth of the CPU of a store-backed run.
    package func snapshotRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await unsafeRead { db in
            var value: T?
            try db.inTransaction(.deferred) {
                value = try body(db)
                return .commit
            }
            return value!
        }
    }
}
