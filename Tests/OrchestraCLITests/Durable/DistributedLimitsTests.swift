import Foundation
import OrchestraTestKit
import TestSupport
import Testing

/// A distributed run's limits in the store come from `WorkflowLimits`, as the local run's do.
@Suite(
    "orchestra run --state postgres://…: the workflow's limits in the store",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(5)), .takesTurns)
struct DistributedLimitsTests {
    /// A `limit:` (and a `hosts:` limit) beyond what the store's 32-bit columns hold opens the
    /// run as no limit: it failed before sending anything, with 'integer out of range (22003)'.
    @Test func aLimitBeyondThirtyTwoBitsStillOpensTheRun() async throws {
        try await DistributedRunTests.withServerAndSchema { server, schema in
            let base = server.baseURL
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(base.absoluteString)" }
                limit: 3000000000
                hosts: { "\(base.host!):\(base.port!)": 9223372036854775807 }
                steps:
                  - { id: list, url: "{{vars.base}}/list/5", captures: { items: $.items } }
                  - { id: each, for_each: "{{list.items}}", url: "{{vars.base}}/status/200?i={{item}}" }
                """)
            let run = try await DistributedRunTests.run(file, schema: schema, runID: "big", workers: 1)
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("5 requests sent, 5 succeeded"), "\(run)")
            #expect(!run.stderr.contains("out of range"), "\(run)")
        }
    }
}
