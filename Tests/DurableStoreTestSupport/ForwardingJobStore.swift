import Foundation
import OrchestraDurable

/// A store that hands every call to `base`: a test's wrapper conforms and implements only the
/// calls it changes (one that waits, records or interferes), the others forwarded as they are.
package protocol ForwardingJobStore: JobStore {
    var base: any JobStore { get }
}

extension ForwardingJobStore {
    package var workSignal: WorkSignal { base.workSignal }
    package func submit(_ run: DurableSubmission) async throws -> Bool { try await base.submit(run) }
    package func append(_ jobs: DurableSubmission) async throws -> Int { try await base.append(jobs) }
    package func close(runID: String, now: Date) async throws -> DurableRunState? {
        try await base.close(runID: runID, now: now)
    }
    package func jobs(of runID: String, ids: [String]) async throws -> [DurableJobRecord] {
        try await base.jobs(of: runID, ids: ids)
    }
    package func record(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
    ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob]) {
        try await base.record(outcomes, thenClaim: claim, now: now)
    }
    package func renewLeases(of jobs: [JobKey], worker: String, until expiry: Date) async throws {
        try await base.renewLeases(of: jobs, worker: worker, until: expiry)
    }
    package func releaseLeases(of jobs: [JobKey], worker: String, now: Date) async throws {
        try await base.releaseLeases(of: jobs, worker: worker, now: now)
    }
    package func releaseLeases(of jobs: [JobKey], started: Set<JobKey>, worker: String, now: Date) async throws {
        try await base.releaseLeases(of: jobs, started: started, worker: worker, now: now)
    }
    package func resendUncertain(runID: String, now: Date) async throws -> Int {
        try await base.resendUncertain(runID: runID, now: now)
    }
    package func pauseResource(_ resource: String, of runID: String, until: Date, now: Date) async throws {
        try await base.pauseResource(resource, of: runID, until: until, now: now)
    }
    package func removeRuns(endedBefore date: Date) async throws -> Int { try await base.removeRuns(endedBefore: date) }
    package func cancel(runID: String, now: Date) async throws -> Bool { try await base.cancel(runID: runID, now: now) }
    package func run(_ runID: String) async throws -> DurableRunRecord? { try await base.run(runID) }
    package func jobs(of runID: String) async throws -> [DurableJobRecord] { try await base.jobs(of: runID) }
    package func outlook(after now: Date, kinds: Set<String>) async throws -> WorkOutlook {
        try await base.outlook(after: now, kinds: kinds)
    }
}
