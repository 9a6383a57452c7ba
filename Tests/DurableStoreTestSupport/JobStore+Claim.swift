import Foundation
import OrchestraDurable

extension JobStore {
    /// Claims up to `limit` jobs of `kinds` for `worker`, recording nothing: what another worker
    /// does, for a test to check which jobs a store lets it take.
    package func claim(
        worker: String, kinds: Set<String>, limit: Int, now: Date, leaseExpiry: Date
    ) async throws -> [ClaimedJob] {
        try await record(
            [], thenClaim: Claim(worker: worker, kinds: kinds, limit: limit, now: now, leaseExpiry: leaseExpiry),
            now: now
        ).claimed
    }
}
