import Foundation
import GRDB
import Orchestra
import OrchestraDurable
import OrchestraHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `--state` file of a workflow run: a SQLite file (WAL) that records every request as it
/// ends, so that running the same workflow again with the same file sends only what has not
/// succeeded yet.
///
/// Writes are grouped: ``record(step:item:_:)`` queues a record and returns at once, and one
/// writer (``runWriter()``) commits everything queued in one transaction, then the next batch.
/// A request that is not safe to send twice waits in ``intent(step:item:url:)`` until its
/// "sending" record is committed, so that a later run knows it may have been sent. A record
/// lost in a kill is at worst a request sent again that is safe to send again.
///
/// One process at a time: the file is locked (`flock`) while it is open, and released when
/// its run's writer has written the run's end (``runWriter()`` returns), or when the process
/// ends, however it ends.
package final class WorkflowState: Sendable {
    /// The file, for messages.
    package let path: String
    /// This run's number: 1 for the first run with the file, 2 for the first resume…
    package let run: Int
    private let database: DatabaseQueue
    private let writer: Locked<WriterState>

    private init(path: String, run: Int, database: DatabaseQueue, lockDescriptor: Int32) {
        self.path = path
        self.run = run
        self.database = database
        writer = Locked(WriterState(lockDescriptor: lockDescriptor))
    }

    deinit {
        // A state opened but never run to its end (the command failed before the run): the file
        // is not behind anything, and says so.
        if writer.withLock({ !$0.closed && $0.failure == nil }) { try? Self.endRun(run, database) }
        releaseLock()
    }

    /// Lets another run use the file: called once the run's last write is done, not left to
    /// `deinit`, which may come later than the next run in the same process (a test, an app
    /// running a workflow twice) if a task still holds this object.
    private func releaseLock() {
        let descriptor = writer.withLock { state in
            defer { state.lockDescriptor = nil }
            return state.lockDescriptor
        }
        if let descriptor { close(descriptor) }
    }

    /// Opens (or creates) the state file at `path` for a run of `workflow`.
    ///
    /// A file whose last run did not end (it never cleared `open_run`) and that has no `-wal`
    /// file beside it (or an empty one) is a copy taken during that run: the run's last commits, in its `-wal`,
    /// are not in it, and a resume would send again requests that reached the server, POSTs
    /// included. It is refused unless `force`. (After a crash, the `-wal` is beside the file
    /// and SQLite reads it back.)
    ///
    /// - Parameter force: Use a file written by a run of another version of the workflow file
    ///   anyway: records are reused by step id and element index (a `for_each` step whose list
    ///   changed starts its elements over); or a copy taken during a run.
    /// - Throws: ``WorkflowStateError``: not a state file, another program's database, a newer
    ///   schema, another workflow's file or a copy taken during a run (unless `force`), in use
    ///   by another process.
    package static func open(
        path: String, workflow: Workflow, force: Bool
    ) throws(WorkflowStateError)
        -> WorkflowState
    {
        try checkPath(path)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw WorkflowStateError(.storeFailed, "\(path): the folder \(folder) does not exist")
        }
        // Looked at before SQLite opens the file (and creates one). A reader (`orchestra status`)
        // leaves an empty one; a run writes its first commit before anything can copy it.
        let log = try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
        let hasLog = (log ?? 0) > 0
        let database: DatabaseQueue
        do {
            database = try fileFormat.open(path: path, migrator: migrator)
        } catch {
            throw WorkflowStateError(error)
        }
        // Close-on-exec: a child process (a test spawning `orchestra`) must not inherit the lock.
        let descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw WorkflowStateError(.storeFailed, "\(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw WorkflowStateError(
                .inUse, "\(path) is in use by another orchestra process: one run at a time may use a state file")
        }
        do {
            let run = try database.write { db in
                try begin(workflow, force: force, hasLog: hasLog, path: path, db)
            }
            // The run's mark in the file itself, not only in its -wal: a copy of the file alone
            // taken during the run has it, and is known for a copy.
            _ = try database.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            return WorkflowState(path: path, run: run, database: database, lockDescriptor: descriptor)
        } catch {
            close(descriptor)
            if let error = error as? WorkflowStateError { throw error }
            throw WorkflowStateError(fileFormat.mapped(error, path: path))
        }
    }

    /// Refuses a path that is a folder, or a device or other special file, before SQLite
    /// tries it.
    static func checkPath(_ path: String) throws(WorkflowStateError) {
        guard let type = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType else {
            return
        }
        switch type {
        case .typeDirectory: throw WorkflowStateError(.storeFailed, "\(path) is a directory, not a state file")
        case .typeRegular: return
        default: throw WorkflowStateError(.notAStateFile, "\(path) is not a regular file, so not a state file")
        }
    }

    /// Checks the file belongs to `workflow` (or `force`), counts the run and stores the steps.
    private static func begin(
        _ workflow: Workflow, force: Bool, hasLog: Bool, path: String, _ db: Database
    ) throws -> Int {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let file = workflow.file ?? ""
        var run = 1
        if let row = try Row.fetchOne(db, sql: "SELECT file, digest, runs, open_run FROM workflow WHERE id = 1") {
            let digest: String = row["digest"]
            if digest != workflow.digest, !force {
                let recorded: String = row["file"]
                throw WorkflowStateError(
                    .differentWorkflow,
                    "\(path) records a run of another workflow file (\(recorded), sha256 \(digest.prefix(12))…; this one is \(workflow.digest.prefix(12))…): resume with the file it recorded, use another --state file, or give --force to reuse its records by step id"
                )
            }
            if let open = row["open_run"] as Int?, !hasLog, !force {
                throw WorkflowStateError(
                    .behindItsRun,
                    "\(path) was copied while run \(open) was using it (it has no -wal file beside it, and run \(open) never ended in it): what that run did after the copy is not recorded, so a resume would send again requests that reached the server; resume with the original file, or back it up with 'orchestra status --state FILE --backup COPY' when no run uses it; --force resumes from this copy anyway"
                )
            }
            run = (row["runs"] as Int) + 1
            try db.execute(
                sql:
                    "UPDATE workflow SET name = ?, file = ?, digest = ?, updated = ?, runs = ?, open_run = ? WHERE id = 1",
                arguments: [workflow.name, file, workflow.digest, now, run, run])
        } else {
            try db.execute(
                sql: """
                    INSERT INTO workflow (id, name, file, digest, created, updated, runs, open_run)
                    VALUES (1, ?, ?, ?, ?, ?, 1, 1)
                    """,
                arguments: [workflow.name, file, workflow.digest, now, now])
        }
        // A `when:` is decided again by each run: a skip is this run's to record, and a step an
        // earlier run skipped is to be sent until this one skips it too.
        try db.execute(sql: "DELETE FROM records WHERE state = ?", arguments: [StateRecord.State.skipped.rawValue])
        // The steps as the file has them now; records of steps it no longer has, or whose
        // kind changed (a request, a for_each), are dropped.
        let current = Dictionary(workflow.steps.map { ($0.id, $0.forEach != nil) }, uniquingKeysWith: { a, _ in a })
        for row in try Row.fetchAll(db, sql: "SELECT id, for_each FROM steps") {
            let id: String = row["id"]
            let forEach: Bool = row["for_each"]
            if current[id] != forEach {
                try db.execute(sql: "DELETE FROM records WHERE step = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM steps WHERE id = ?", arguments: [id])
            }
        }
        let upsert = try db.makeStatement(
            sql: """
                INSERT INTO steps (id, position, for_each) VALUES (?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET position = excluded.position
                """)
        for (position, step) in workflow.steps.enumerated() {
            try upsert.execute(arguments: [step.id, position, step.forEach != nil])
        }
        return run
    }

    // MARK: - Reading

    /// The record of step `step`'s own request (not a `for_each` step's).
    package func record(step: String) async throws -> StateRecord? {
        try await read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "\(Self.selectRecord) WHERE step = ? AND item = -1"), arguments: [step]
            ).map(Self.record(of:))
        }
    }

    /// The records of `for_each` step `step`'s elements from index `from` on, in index order,
    /// at most `limit` of them.
    package func records(step: String, from: Int, limit: Int) async throws -> [(item: Int, record: StateRecord)] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "\(Self.selectRecord) WHERE step = ? AND item >= ? ORDER BY item LIMIT ?"),
                arguments: [step, from, limit]
            ).map { ($0["item"], Self.record(of: $0)) }
        }
    }

    /// Records that `for_each` step `step` read a list of `count` elements whose JSON text is
    /// `list`; if the file held a different list for the step, its element records are dropped
    /// (their indexes would name other elements). Returns once committed.
    package func prepareList(step: String, count: Int, list: String) async throws {
        try await enqueue(.list(step: step, count: count, digest: list.sha256Hex))
    }

    private static let selectRecord =
        "SELECT item, state, status, attempts, url, error, captures, run FROM records"

    private static func record(of row: Row) -> StateRecord {
        var captures: [String: JSONValue] = [:]
        if let text: String = row["captures"], case .object(let members)? = try? JSONValue(parsing: Data(text.utf8)) {
            for member in members { captures[member.key] = member.value }
        }
        return StateRecord(
            state: StateRecord.State(rawValue: row["state"]) ?? .failed, status: row["status"],
            attempts: row["attempts"], url: row["url"], error: row["error"], captures: captures, run: row["run"])
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await database.snapshotRead(body)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw WorkflowStateError(Self.fileFormat.mapped(error, path: path))
        }
    }

    // MARK: - Writing

    /// Records that `step`'s request (`item` -1) or element `item` is about to be sent to
    /// `url`, and returns once that is committed: a run that finds the record later knows the
    /// request may have been sent.
    ///
    /// Not cancellable: it waits for the commit under way (the writer never waits for anything
    /// else).
    package func intent(step: String, item: Int, url: String) async throws {
        try await enqueue(
            .record(step: step, item: item, StateRecord(state: .sending, url: url, run: run)))
    }

    /// Queues `record` as the record of `step`'s request (`item` -1) or of element `item`;
    /// written with the next batch. Does nothing once writing has failed (``finish()`` reports
    /// it).
    package func record(step: String, item: Int, _ record: StateRecord) {
        let wake = writer.withLock { $0.append(.record(step: step, item: item, record)) }
        wake?.resume()
    }

    /// Queues each host's figures at the end of this run (``WorkflowStateSummary/hosts`` adds
    /// up the runs'); written with the next batch.
    package func recordHosts(_ hosts: [HTTPHostRate]) {
        guard !hosts.isEmpty else { return }
        let wake = writer.withLock { $0.append(.hosts(hosts)) }
        wake?.resume()
    }

    /// Queues `write` and returns once it is committed.
    private func enqueue(_ write: Write) async throws {
        let failure = await withCheckedContinuation { (continuation: Waiter) in
            let (wake, failure) = writer.withLock { state -> (CheckedContinuation<Void, Never>?, WorkflowStateError?) in
                if let failure = state.failure { return (nil, failure) }
                let wake = state.append(write)
                state.waiters.append((state.enqueued, continuation))
                return (wake, nil)
            }
            if let failure { continuation.resume(returning: failure) }
            wake?.resume()
        }
        if let failure { throw failure }
    }

    /// A task waiting for its write's commit; resumed with the failure if writing failed.
    typealias Waiter = CheckedContinuation<WorkflowStateError?, Never>

    /// Commits what is queued, batch after batch, until ``finish()`` has been called and the
    /// queue is empty. Run it beside the run (a child task); it ignores cancellation, so that
    /// what a cancelled run did is still written.
    package func runWriter() async {
        defer {
            // The run's last write: it ended in this file (unless a write failed, then the
            // file stays marked, as after a crash).
            if failure == nil, (try? Self.endRun(run, database)) != nil {
                writer.withLock { $0.closed = true }
            }
            releaseLock()
        }
        while let (writes, upTo) = await nextBatch() {
            let run = self.run
            let result: Result<Void, any Error> = await withCheckedContinuation { continuation in
                database.asyncWrite({ db in try Self.apply(writes, run: run, db) }) { _, result in
                    continuation.resume(returning: result)
                }
            }
            let waiters: [(Int, Waiter)]
            let failure: WorkflowStateError?
            switch result {
            case .success:
                failure = nil
                waiters = writer.withLock { $0.committed(upTo: upTo) }
            case .failure(let error):
                let mapped = WorkflowStateError(Self.fileFormat.mapped(error, path: path))
                failure = mapped
                waiters = writer.withLock { $0.failed(mapped) }
            }
            for (_, waiter) in waiters { waiter.resume(returning: failure) }
        }
    }

    /// Clears the file's mark of run `run`: it ended in this file.
    private static func endRun(_ run: Int, _ database: DatabaseQueue) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE workflow SET open_run = NULL WHERE id = 1 AND open_run = ?", arguments: [run])
        }
    }

    /// Tells the writer to stop once everything queued is written; await ``runWriter()`` after.
    package func finish() {
        let wake = writer.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finishing = true
            defer { state.wake = nil }
            return state.wake
        }
        wake?.resume()
    }

    /// Why writing failed, if it did: records queued since were not written.
    package var failure: WorkflowStateError? {
        writer.withLock { $0.failure }
    }

    /// The next writes and the number of the last, or `nil` when finished and empty.
    private func nextBatch() async -> ([Write], Int)? {
        while true {
            let batch = writer.withLock { $0.take() }
            switch batch {
            case .writes(let writes, let upTo): return (writes, upTo)
            case .done: return nil
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = writer.withLock { state -> Bool in
                        guard state.pending.isEmpty, !state.finishing else { return true }
                        state.wake = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    private static func apply(_ writes: [Write], run: Int, _ db: Database) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for write in writes {
            switch write {
            case .record(let step, let item, let record):
                let captures: String? =
                    record.captures.isEmpty
                    ? nil
                    : JSONValue.object(
                        record.captures.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, $0.value) }
                    ).text
                try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO records (step, item, state, status, attempts, url, error, captures, run, updated)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    step, item, record.state.rawValue, record.status, record.attempts, record.url, record.error,
                    captures, run, now,
                ])
            case .hosts(let hosts):
                for host in hosts {
                    try db.cachedStatement(
                        sql: """
                            INSERT OR REPLACE INTO hosts (host, run, requests, rate, effective_rate, too_many_requests, pauses)
                            VALUES (?, ?, ?, ?, ?, ?, ?)
                            """
                    ).execute(arguments: [
                        host.host, run, host.requestsSent, host.configuredRate.map(HTTPRateEvent.text),
                        host.effectiveRate.map(HTTPRateEvent.text), host.tooManyRequests, host.pauses,
                    ])
                }
            case .list(let step, let count, let digest):
                let recorded = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT list_digest FROM steps WHERE id = ?"), arguments: [step])
                if let recorded, recorded != digest {
                    try db.execute(sql: "DELETE FROM records WHERE step = ?", arguments: [step])
                }
                try db.cachedStatement(sql: "UPDATE steps SET total = ?, list_digest = ? WHERE id = ?")
                    .execute(arguments: [count, digest, step])
            }
        }
        try db.cachedStatement(sql: "UPDATE workflow SET updated = ? WHERE id = 1").execute(arguments: [now])
    }

    /// One change the writer makes.
    enum Write: Sendable {
        case record(step: String, item: Int, StateRecord)
        case list(step: String, count: Int, digest: String)
        case hosts([HTTPHostRate])
    }

    /// The writer's queue: what is waiting to be written, who waits for a commit, and the
    /// writer itself when it has nothing to do.
    struct WriterState {
        var pending: [Write] = []
        /// Writes queued so far; a waiter waits for the commit of the write with its number.
        var enqueued = 0
        var waiters: [(Int, Waiter)] = []
        var wake: CheckedContinuation<Void, Never>?
        var finishing = false
        var failure: WorkflowStateError?
        /// Whether the file's mark of this run was cleared: the run ended in it.
        var closed = false
        /// The descriptor holding the file's lock, until it is released (`nil` after).
        var lockDescriptor: Int32?

        enum Batch {
            case writes([Write], upTo: Int)
            case wait
            case done
        }

        /// Queues `write` (dropped after a failure); returns the writer to wake, if it waits.
        mutating func append(_ write: Write) -> CheckedContinuation<Void, Never>? {
            guard failure == nil else { return nil }
            pending.append(write)
            enqueued += 1
            defer { wake = nil }
            return wake
        }

        mutating func take() -> Batch {
            if !pending.isEmpty {
                defer { pending.removeAll(keepingCapacity: true) }
                return .writes(pending, upTo: enqueued)
            }
            return finishing ? .done : .wait
        }

        /// The waiters whose writes are committed, removed.
        mutating func committed(upTo: Int) -> [(Int, Waiter)] {
            let done = waiters.filter { $0.0 <= upTo }
            waiters.removeAll { $0.0 <= upTo }
            return done
        }

        /// Every waiter, removed; later writes are dropped.
        mutating func failed(_ error: WorkflowStateError) -> [(Int, Waiter)] {
            failure = failure ?? error
            pending.removeAll()
            defer { waiters.removeAll() }
            return waiters
        }
    }
}
