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

/// One host's figures as a run's coordinator saw them, kept in the run for `orchestra status`:
/// what only the coordinator knows (the server's answers), beside what the store holds.
public struct DurableHostFigures: Sendable, Hashable {
    /// The host, as the coordinator names it (`https://api.example.com:443`).
    public var host: String
    /// Requests started to it.
    public var requests: Int
    /// Its configured rate and the one its server set, in words (`20/s`), if any.
    public var rate: String?
    public var effectiveRate: String?
    /// Its 429 responses, and the pauses they or its announced quota caused.
    public var tooManyRequests: Int
    public var pauses: Int

    /// A host's figures; see each property.
    public init(
        host: String, requests: Int, rate: String?, effectiveRate: String?, tooManyRequests: Int, pauses: Int
    ) {
        self.host = host
        self.requests = requests
        self.rate = rate
        self.effectiveRate = effectiveRate
        self.tooManyRequests = tooManyRequests
        self.pauses = pauses
    }
}

extension PostgresJobStore {
    /// Adds a coordinator's host figures to run `runID`'s: requests, 429s and pauses add up
    /// over the coordinators of the run (one that goes on with it after another stopped), the
    /// rates are the last one's. Figures of a run that does not exist are dropped.
    public func recordHosts(_ hosts: [DurableHostFigures], of runID: String) async throws {
        guard !hosts.isEmpty else { return }
        try await transaction { [self] connection in
            for host in hosts {
                try await connection.query(
                    """
                    INSERT INTO \(unescaped: table("run_hosts"))
                        (run_id, host, requests, rate, effective_rate, too_many_requests, pauses)
                    SELECT \(runID), \(host.host), \(Int64(host.requests)), \(host.rate), \(host.effectiveRate),
                        \(Int64(host.tooManyRequests)), \(Int64(host.pauses))
                    WHERE EXISTS (SELECT 1 FROM \(unescaped: table("runs")) WHERE id = \(runID))
                    ON CONFLICT (run_id, host) DO UPDATE SET
                        requests = \(unescaped: table("run_hosts")).requests + EXCLUDED.requests,
                        rate = EXCLUDED.rate, effective_rate = EXCLUDED.effective_rate,
                        too_many_requests = \(unescaped: table("run_hosts")).too_many_requests + EXCLUDED.too_many_requests,
                        pauses = \(unescaped: table("run_hosts")).pauses + EXCLUDED.pauses
                    """, logger: logger)
            }
        }
    }

    /// The host figures the coordinators of run `runID` recorded, by host.
    public func hosts(of runID: String) async throws -> [DurableHostFigures] {
        try await read { [self] connection in
            var hosts: [DurableHostFigures] = []
            for try await (host, requests, rate, effective, tooMany, pauses) in try await connection.query(
                """
                SELECT host, requests, rate, effective_rate, too_many_requests, pauses
                FROM \(unescaped: table("run_hosts")) WHERE run_id = \(runID) ORDER BY host
                """, logger: logger
            ).decode((String, Int64, String?, String?, Int64, Int64).self) {
                hosts.append(
                    DurableHostFigures(
                        host: host, requests: Int(requests), rate: rate, effectiveRate: effective,
                        tooManyRequests: Int(tooMany), pauses: Int(pauses)))
            }
            return hosts
        }
    }

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
