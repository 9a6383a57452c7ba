import Foundation
import GRDB
import OrchestraDurable

/// Where a resumable run stands, read from its `--state` file (`orchestra status`): per step,
/// how many of its requests succeeded, failed, may have been sent, or are still to be sent, or
/// whether a `when:` skipped it.
package struct WorkflowStateSummary: Sendable {
    /// One step of the workflow, in file order.
    package struct Step: Sendable, Hashable {
        package var id: String
        /// Whether it is a `for_each` step.
        package var forEach: Bool
        /// For a `for_each` step whose list was read: its length.
        package var total: Int?
        package var succeeded = 0
        package var failed = 0
        /// In flight when a run stopped, and not safe to send twice.
        package var maybeSent = 0
        /// Skipped by a `when:` (its own or a dependency's) in the file's last run: nothing to
        /// send, and not a failure (the run succeeds without it).
        package var skipped = false

        /// Requests still to be sent: the elements without a record (or, for a step's own
        /// request, 1 without one); `nil` for a `for_each` step whose list was never read; none
        /// for a skipped step.
        package var pending: Int? {
            if skipped { return 0 }
            guard forEach else { return succeeded + failed + maybeSent == 0 ? 1 : 0 }
            return total.map { max(0, $0 - succeeded - failed - maybeSent) }
        }

        /// Whether every request of the step succeeded, or it was skipped by a `when:`.
        package var isDone: Bool {
            if skipped { return true }
            return forEach ? total.map { succeeded == $0 } ?? false : succeeded == 1
        }
    }

    package var name: String?
    /// The workflow file, as given to the last run.
    package var file: String
    /// The SHA-256 of the workflow file's text.
    package var digest: String
    package var created: Date
    package var updated: Date
    /// Runs that used the file.
    package var runs: Int
    package var steps: [Step]
    /// The run that has not ended in the file, if one has not: it is running, or it stopped
    /// without ending (a crash), or the file is a copy taken while it ran.
    package var openRun: Int? = nil
    /// Each host's figures over every run that ended in the file, by host: requests sent,
    /// 429s and pauses added up, the rates of the last run.
    package var hosts: [Host] = []

    /// A host's figures (`HTTPHostRate` over the runs).
    package struct Host: Sendable, Hashable {
        package var host: String
        package var requests: Int
        /// `20/s`, or `nil`: not limited.
        package var rate: String?
        package var effectiveRate: String?
        package var tooManyRequests: Int
        package var pauses: Int
    }

    /// Whether every request of every step succeeded.
    package var isComplete: Bool { steps.allSatisfy(\.isDone) }

    /// Reads the state file at `path`, without changing it (a run may be using it).
    ///
    /// - Throws: ``WorkflowStateError``: no such file, not a state file, a newer schema.
    package static func read(path: String) throws(WorkflowStateError) -> WorkflowStateSummary {
        guard FileManager.default.fileExists(atPath: path) else {
            throw WorkflowStateError(.missing, "\(path): no such state file")
        }
        try WorkflowState.checkPath(path)
        let database: DatabaseQueue
        do {
            database = try WorkflowState.fileFormat.open(
                path: path, readOnly: true, migrator: WorkflowState.migrator)
        } catch {
            throw WorkflowStateError(error)
        }
        do {
            return try database.read { db in
                guard try db.tableExists("workflow") else {
                    throw WorkflowStateError(.notAStateFile, "\(path) is empty: no run has used it as a state file")
                }
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM workflow WHERE id = 1") else {
                    throw WorkflowStateError(.foreignFile, "\(path) is a state file that no run has used yet")
                }
                var steps = try Row.fetchAll(db, sql: "SELECT id, for_each, total FROM steps ORDER BY position").map {
                    Step(id: $0["id"], forEach: $0["for_each"], total: $0["total"])
                }
                let positions = Dictionary(steps.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
                for count in try Row.fetchAll(
                    db, sql: "SELECT step, state, COUNT(*) AS n FROM records GROUP BY step, state")
                {
                    guard let position = positions[count["step"]] else { continue }
                    let n: Int = count["n"]
                    switch StateRecord.State(rawValue: count["state"]) {
                    case .succeeded: steps[position].succeeded += n
                    case .failed: steps[position].failed += n
                    case .sending: steps[position].maybeSent += n
                    case .skipped: steps[position].skipped = true
                    case nil: break
                    }
                }
                var summary = WorkflowStateSummary(
                    name: row["name"], file: row["file"], digest: row["digest"],
                    created: Date(timeIntervalSince1970: Double(row["created"] as Int64) / 1000),
                    updated: Date(timeIntervalSince1970: Double(row["updated"] as Int64) / 1000),
                    runs: row["runs"], steps: steps, openRun: row["open_run"])
                // A file of schema 2 (read-only: not migrated) has no figures.
                if try db.tableExists("hosts") {
                    summary.hosts = try Row.fetchAll(
                        db,
                        sql: """
                            SELECT host, SUM(requests) AS requests, SUM(too_many_requests) AS too_many, SUM(pauses) AS pauses,
                                (SELECT rate FROM hosts AS last WHERE last.host = hosts.host ORDER BY run DESC LIMIT 1) AS rate,
                                (SELECT effective_rate FROM hosts AS last WHERE last.host = hosts.host ORDER BY run DESC LIMIT 1) AS effective
                            FROM hosts GROUP BY host ORDER BY host
                            """
                    ).map { row in
                        Host(
                            host: row["host"], requests: row["requests"], rate: row["rate"],
                            effectiveRate: row["effective"],
                            tooManyRequests: row["too_many"], pauses: row["pauses"])
                    }
                }
                return summary
            }
        } catch let error as WorkflowStateError {
            throw error
        } catch {
            throw WorkflowStateError(WorkflowState.fileFormat.mapped(error, path: path))
        }
    }
}

extension WorkflowStateSummary {
    /// Copies the state file at `path` to a new file at `destination` with SQLite's backup API:
    /// one consistent snapshot, its `-wal` included, even while a run writes it (copying the
    /// file alone during a run gives a file behind the run, or a damaged one). The copy is
    /// readable by its owner only. Returns the copy's summary.
    ///
    /// A copy taken while a run uses the file is behind what that run does next: a resume from
    /// it is refused unless forced (``WorkflowState/open(path:workflow:force:)``).
    ///
    /// - Throws: ``WorkflowStateError``: no such state file, not a state file, a newer schema,
    ///   `destination` exists already or cannot be written.
    package static func backup(path: String, to destination: String) throws(WorkflowStateError) -> WorkflowStateSummary
    {
        let summary = try read(path: path)
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw WorkflowStateError(.storeFailed, "\(destination) exists already: a backup is written to a new file")
        }
        do {
            let source = try WorkflowState.fileFormat.open(path: path, readOnly: true, migrator: WorkflowState.migrator)
            // Created here, so that its mode is the owner's only from the start.
            let descriptor = Foundation.open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw WorkflowStateError(
                    .storeFailed, "\(destination) cannot be created: \(String(cString: strerror(errno)))")
            }
            Foundation.close(descriptor)
            do {
                let copy = try DatabaseQueue(path: destination)
                try source.backup(to: copy)
                try copy.close()
            } catch {
                try? FileManager.default.removeItem(atPath: destination)
                throw WorkflowStateError(WorkflowState.fileFormat.mapped(error, path: destination))
            }
        } catch let error as WorkflowStateError {
            throw error
        } catch let error as DurableError {
            throw WorkflowStateError(error)
        } catch {
            throw WorkflowStateError(.storeFailed, "\(destination): \(error)")
        }
        return summary
    }
}
