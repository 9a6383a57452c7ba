import Foundation
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// A notification of outcomes names its jobs in its payload, and says "any job" whenever it
/// cannot: names too long for PostgreSQL's 8,000-byte payload, and a payload an older process
/// sent (empty) or that cannot be read.
@Suite("PostgresJobStore: the jobs a notification of outcomes names", .takesTurns)
struct OutcomePayloadTests {
    @Test func namedJobsOfSeveralRunsComeBackAsSent() {
        let keys = [
            JobKey(runID: "run-a", jobID: "hit[1]"), JobKey(runID: "run-a", jobID: "quote\"and\\slash"),
            JobKey(runID: "run-b", jobID: "ünïcode #2"),
        ]
        let payload = PostgresJobStore.outcomePayload(.jobs(keys))
        guard case .jobs(let back) = PostgresJobStore.outcomeNotice(payload) else {
            Issue.record("\(payload) read as any job")
            return
        }
        #expect(Set(back) == Set(keys))
    }

    @Test func whatCannotBeNamedInAPayloadIsAnyJob() {
        let many = (0..<1_000).map { JobKey(runID: "run", jobID: "a-long-job-name-\($0)") }
        #expect(PostgresJobStore.outcomePayload(.jobs(many)).isEmpty)
        #expect(PostgresJobStore.outcomePayload(.any).isEmpty)
        for payload in ["", "{", "[\"a\"]", "{\"run\": 3}"] {
            #expect(PostgresJobStore.outcomeNotice(payload) == .any, "\(payload)")
        }
    }
}
