import Foundation
import OrchestraDurable
import PostgresNIO

extension PostgresJobStore: WorkNotifications {
    /// Shared by every process connected to the schema: notifications (`LISTEN`) wake idle
    /// workers at once, and they poll every `pollInterval` besides.
    public var workSignal: WorkSignal { .notifications(self, pollingEvery: pollInterval) }

    /// Reads the runs' and jobs' states in one statement (one snapshot); a job of none of
    /// `kinds` in a second, only when no job is due and no run is open.
    public func outlook(after now: Date, kinds: Set<String>) async throws -> WorkOutlook {
        let now = Millis.of(now)
        let kinds = kinds.sorted()
        return try await read { [self] connection in
            let row = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM \(unescaped: table("runs")) WHERE state = 'running'),
                    EXISTS (SELECT 1 FROM \(unescaped: table("runs")) WHERE state = 'running' AND open_for_jobs),
                    (SELECT MIN(run_at) FROM \(unescaped: table("jobs")) WHERE state = 'ready' AND run_at > \(now)),
                    (SELECT MIN(lease_expiry) FROM \(unescaped: table("jobs"))
                        WHERE state = 'running' AND lease_expiry > \(now))
                """, logger: logger
            ).decode((Bool, Bool, Int64?, Int64?).self).onlyRow()
            guard let (unfinished, open, retry, lease) = row, unfinished else {
                return WorkOutlook(hasUnfinishedRuns: false, hasOpenRuns: false, nextDueTime: nil)
            }
            let due = [retry, lease].compactMap { $0 }.min().map(Millis.date)
            var outlook = WorkOutlook(hasUnfinishedRuns: true, hasOpenRuns: open, nextDueTime: due)
            guard due == nil, !open else { return outlook }
            for try await (runID, id, kind) in try await connection.query(
                """
                SELECT run_id, id, kind FROM \(unescaped: table("jobs"))
                WHERE state = 'ready' AND NOT (kind = ANY(\(kinds))) ORDER BY run_id, position LIMIT 1
                """, logger: logger
            ).decode((String, String, String).self) {
                outlook.unclaimable = (JobKey(runID: runID, jobID: id), kind)
            }
            return outlook
        }
    }
}
