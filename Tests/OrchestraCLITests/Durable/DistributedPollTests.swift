import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `until:` on a distributed run (`--state postgres://…`): each attempt is a job of its own
/// (`job~poll2#1`), so a later attempt is sent by a worker instead of reading the first
/// attempt's stored response back under the same name.
@Suite(
    "orchestra: until on a distributed run",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(5)), .takesTurns)
struct DistributedPollTests {
    @Test func workersSendEachAttemptOfAPoll() async throws {
        try await DistributedRunTests.withServerAndSchema { server, schema in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - { id: start, method: POST, url: "{{vars.base}}/jobs?polls=3", expect: 201, captures: { id: $.id } }
                  - id: job
                    url: "{{vars.base}}/jobs/{{start.id}}"
                    until: { interval: 20ms, max_attempts: 10 }
                    assert: [ { $.status: done } ]
                """)
            let run = try await DistributedRunTests.run(file, schema: schema, runID: "poll", workers: 1)
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("3 polls"), "\(run)")
            #expect(server.arrivals(of: "/jobs/job-1") == 3, "each attempt reached the server")
        }
    }
}
