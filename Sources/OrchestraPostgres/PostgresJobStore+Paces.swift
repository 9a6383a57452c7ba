import Foundation
public import Orchestra
import OrchestraDurable
import PostgresNIO

/// How one resource of a run is paced, as the store holds it: for `orchestra status`.
public struct DurableResourcePace: Sendable, Hashable {
    /// The resource's name (`host:api.example.com` for a workflow's host).
    public var resource: String
    /// Its rate, if it has one (a resource may only have been paused).
    public var rate: Rate?
    /// Starts at once after a quiet time.
    public var burst: Int
    /// Until when a server's pause holds its jobs, if that is still ahead.
    public var pausedUntil: Date?
    /// Its jobs, and the attempts they were claimed for so far.
    public var jobs: Int
    public var attempts: Int
}

extension PostgresJobStore {
    /// The paced resources of run `runID` (those with a rate or a pause), by name: rate, pause,
    /// and the jobs using each with the attempts claimed for them.
    public func resourcePaces(of runID: String, now: Date = Date()) async throws -> [DurableResourcePace] {
        try await read { [self] connection in
            var paces: [DurableResourcePace] = []
            let rows = try await connection.query(
                """
                SELECT r.name, r.rate_count, r.rate_interval_ns, r.burst, r.paused_until_ns,
                    COUNT(j.id)::BIGINT, COALESCE(SUM(j.attempts), 0)::BIGINT
                FROM \(unescaped: table("run_rates")) r
                LEFT JOIN \(unescaped: table("job_resources")) jr ON jr.run_id = r.run_id AND jr.name = r.name
                LEFT JOIN \(unescaped: table("jobs")) j ON j.run_id = jr.run_id AND j.id = jr.job_id
                WHERE r.run_id = \(runID)
                GROUP BY r.name, r.rate_count, r.rate_interval_ns, r.burst, r.paused_until_ns
                ORDER BY r.name
                """, logger: logger)
            for try await (name, count, interval, burst, paused, jobs, attempts) in rows.decode(
                (String, Int64?, Int64?, Int64, Int64, Int64, Int64).self)
            {
                var rate: Rate?
                if let count, let interval, count >= 1, interval > 0 {
                    rate = .per(Int(count), .nanoseconds(interval))
                }
                let until = Date(timeIntervalSince1970: Double(paused) / 1e9)
                paces.append(
                    DurableResourcePace(
                        resource: name, rate: rate, burst: Int(burst), pausedUntil: until > now ? until : nil,
                        jobs: Int(jobs), attempts: Int(attempts)))
            }
            return paces
        }
    }
}
