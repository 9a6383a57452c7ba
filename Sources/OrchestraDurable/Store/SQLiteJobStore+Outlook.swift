import Foundation
import GRDB

extension SQLiteJobStore: ReleaseTimes {
    /// Only this process uses the file: its queues wake their own workers.
    public var workSignal: WorkSignal { .inProcess }

    public func outlook(after now: Date, kinds: Set<String>) async throws -> WorkOutlook {
        let instant = Nanos.of(now)
        let now = Millis.of(now)
        let kindList = kinds.sorted()
        return try await read { db in
            let unfinished =
                try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM runs WHERE state = 'running')"))
                ?? false
            guard unfinished else { return WorkOutlook(hasUnfinishedRuns: false, hasOpenRuns: false, nextDueTime: nil) }
            let open =
                try Bool.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT EXISTS (SELECT 1 FROM runs WHERE state = 'running' AND open_for_jobs)")) ?? false
            let retry = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT MIN(run_at) FROM jobs WHERE state = 'ready' AND run_at > ?"),
                arguments: [now])
            let lease = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT MIN(lease_expiry) FROM jobs WHERE state = 'running' AND lease_expiry > ?"),
                arguments: [now])
            // When a resource held by its rate or a pause lets its next job go (ClaimPlanner.Pace).
            var release: Int64?
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT rate_count, rate_interval_ns, burst, tat_ns, paused_until_ns FROM run_rates
                        WHERE run_id IN (SELECT id FROM runs WHERE state = 'running')
                        """))
            {
                let pace = ClaimPlanner.Pace(
                    DurableRate(storedCount: row[0], intervalNanoseconds: row[1], burst: row[2]), tat: row[3],
                    pausedUntil: row[4])
                if pace.allowedAt > instant { release = min(release ?? pace.allowedAt, pace.allowedAt) }
            }
            let due = [retry.map(Millis.date), lease.map(Millis.date), release.map(Nanos.dateRoundedUp)]
                .compactMap { $0 }.min()
            var outlook = WorkOutlook(hasUnfinishedRuns: true, hasOpenRuns: open, nextDueTime: due)
            guard due == nil, !open else { return outlook }
            let filter = kindList.isEmpty ? "" : "AND kind NOT IN (\(Self.placeholders(kindList.count)))"
            outlook.unclaimable = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT run_id, id, kind FROM jobs WHERE state = 'ready' \(filter) ORDER BY run_id, position"),
                arguments: StatementArguments(kindList)
            ).map { row in (JobKey(runID: row[0], jobID: row[1]), row[2]) }
            return outlook
        }
    }
}
