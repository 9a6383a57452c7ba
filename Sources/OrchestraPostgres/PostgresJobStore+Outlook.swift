import Foundation
import OrchestraDurable
import PostgresNIO

extension PostgresJobStore: WorkNotifications, ReleaseTimes {
    /// Shared by every process connected to the schema: notifications (`LISTEN`) wake idle
    /// workers at once, and they poll every `pollInterval` besides.
    public var workSignal: WorkSignal { .notifications(self, pollingEvery: pollInterval) }

    /// Reads the runs' and jobs' states in one statement (one snapshot); a job of none of
    /// `kinds` in a second, only when no job is due and no run is open.
    public func outlook(after now: Date, kinds: Set<String>) async throws -> WorkOutlook {
        let instant = Nanos.of(now)
        let now = Millis.of(now)
        let kinds = kinds.sorted()
        return try await read { [self] connection in
            let row = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM \(unescaped: table("runs")) WHERE state = 'running'),
                    EXISTS (SELECT 1 FROM \(unescaped: table("runs")) WHERE state = 'running' AND open_for_jobs),
                    (SELECT MIN(run_at) FROM \(unescaped: table("jobs")) WHERE state = 'ready' AND run_at > \(now)),
                    (SELECT MIN(lease_expiry) FROM \(unescaped: table("jobs"))
                        WHERE state = 'running' AND lease_expiry > \(now)),
                    ARRAY(SELECT u.v FROM \(unescaped: table("run_rates")) p
                        JOIN \(unescaped: table("runs")) r ON r.id = p.run_id
                        CROSS JOIN LATERAL unnest(ARRAY[COALESCE(p.rate_count, 0), COALESCE(p.rate_interval_ns, 0),
                            p.burst, p.tat_ns, p.paused_until_ns]) WITH ORDINALITY AS u (v, i)
                        WHERE r.state = 'running' AND (p.tat_ns > \(instant) OR p.paused_until_ns > \(instant))
                        ORDER BY p.run_id, p.name, u.i)
                """, logger: logger
            ).decode((Bool, Bool, Int64?, Int64?, [Int64]).self).onlyRow()
            guard let (unfinished, open, retry, lease, stored) = row, unfinished else {
                return WorkOutlook(hasUnfinishedRuns: false, hasOpenRuns: false, nextDueTime: nil)
            }
            // When a resource held by its rate or a pause lets its next job go (ClaimPlanner.Pace).
            // Five values a resource: rate count, interval, burst, tat, pause.
            let release = stride(from: 0, to: stored.count - 4, by: 5).compactMap { start -> Int64? in
                let values = stored[start..<start + 5].map { $0 }
                let pace = ClaimPlanner.Pace(
                    DurableRate(
                        storedCount: Int(clamping: values[0]), intervalNanoseconds: values[1],
                        burst: Int(clamping: values[2])), tat: values[3], pausedUntil: values[4])
                return pace.allowedAt > instant ? pace.allowedAt : nil
            }.min()
            let due = [retry.map(Millis.date), lease.map(Millis.date), release.map(Nanos.dateRoundedUp)]
                .compactMap { $0 }.min()
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
