import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// Issue 36 across workers: a `hosts:` rate is held in the store's claims, so that 3 workers
/// send 30 a second in all, not 90, even when a backlog of ready jobs waits for them.
@Suite(
    "orchestra run --state postgres://…: rates across workers",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(5)), .takesTurns)
struct DistributedRateTests {
    /// The case: 600 requests, `rate: 30/s` on the host, 3 workers of 4 requests at
    /// once. The coordinator hands the workers up to 64 requests at a time and leaves the rate
    /// to the store (one engine holds it): without the rate in the claims the workers would
    /// send them as fast as the server answers.
    @Test func threeWorkersKeepToOneRateTogether() async throws {
        try await DistributedRunTests.withServerAndSchema { server, schema in
            let base = server.baseURL
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(base.absoluteString)" }
                limit: 64
                hosts: { "\(base.host!):\(base.port!)": { limit: 64, rate: 30/s } }
                steps:
                  - { id: list, url: "{{vars.base}}/list/600", captures: { items: $.items } }
                  - id: each
                    for_each: "{{list.items}}"
                    url: "{{vars.base}}/limited/spread?limit=100000&n={{item}}"
                    expect: [200]
                """)
            let run = try await DistributedRunTests.run(file, schema: schema, runID: "paced", workers: 3)
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("600 requests sent, 600 succeeded"), "\(run)")
            let stats = try await RateLimitCommandTests.stats(server, bucket: "spread")
            #expect(stats.total == 600 && stats.rejected == 0, "\(stats)")
            #expect(
                stats.max_in_any_second <= 31 + RateLimitCommandTests.serverJitter,
                "30/s and a burst of 1 across 3 workers: \(stats)")
            #expect(stats.span >= 19, "600 starts 1/30 s apart take at least 19.97 s at the server: \(stats)")
            // orchestra status shows the host's rate and the requests started under it.
            let status = try await OrchestraExecutable.run([
                "status", "--state", DistributedRunTests.url, "--schema", schema, "--run", "paced", "--output", "json",
            ])
            #expect(status.status == 0, "\(status)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
            let runs = try #require(document["runs"] as? [[String: Any]])
            let resources = try #require(runs.first?["resources"] as? [[String: Any]])
            let host = try #require(resources.first)
            #expect(host["resource"] as? String == "host:\(base.host!):\(base.port!)")
            #expect(host["rate"] as? String == "30/s" && host["burst"] as? Int == 1)
            #expect(host["jobs"] as? Int == 601, "the list and 600 elements: \(host)")
            #expect((host["requests"] as? Int ?? 0) >= 601, "\(host)")
            let text = try await OrchestraExecutable.run([
                "status", "--state", DistributedRunTests.url, "--schema", schema, "--run", "paced", "--no-color",
            ])
            #expect(
                text.stdout.contains("paced · host:\(base.host!):\(base.port!) · 30/s · 601 requests started"),
                "\(text)")
        }
    }

    /// A server's 429 with `Retry-After` holds the jobs the store has for its host, for every
    /// worker, not only the requests the coordinator has yet to hand out: 80 requests at
    /// 200/s to a server that takes 10 a second.
    @Test func aServersPauseHoldsTheJobsInTheStore() async throws {
        try await DistributedRunTests.withServerAndSchema { server, schema in
            let base = server.baseURL
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(base.absoluteString)" }
                limit: 64
                hosts: { "\(base.host!):\(base.port!)": { limit: 64, rate: 200/s } }
                steps:
                  - { id: list, url: "{{vars.base}}/list/80", captures: { items: $.items } }
                  - id: each
                    for_each: "{{list.items}}"
                    url: "{{vars.base}}/limited/held?limit=10&n={{item}}"
                    retry: { attempts: 10 }
                    expect: [200]
                """)
            let run = try await DistributedRunTests.run(file, schema: schema, runID: "held", workers: 2)
            #expect(run.status == 0, "\(run)")
            let stats = try await RateLimitCommandTests.stats(server, bucket: "held")
            #expect(stats.accepted == 80, "\(stats)")
            // Held in the store, each window's 10 go and a few more are refused before the pause
            // is in (32 in 2 runs); claimed regardless, the workers kept sending at 200/s (114
            // and 118 refused).
            #expect(stats.rejected < 70, "\(stats)")
            // The summary names the host's rate, which the store held, as a local run's does.
            #expect(run.stdout.contains("requests at 200/s"), "\(run.stdout)")
            #expect(run.stdout.contains("× 429"), "\(run.stdout)")
            // The run keeps what its coordinator saw of the host: status shows the 429s.
            let status = try await OrchestraExecutable.run([
                "status", "--state", DistributedRunTests.url, "--schema", schema, "--run", "held", "--output", "json",
            ])
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
            let runs = try #require(document["runs"] as? [[String: Any]])
            let hosts = try #require(runs.first?["hosts"] as? [[String: Any]])
            let host = try #require(hosts.first)
            #expect(host["host"] as? String == "http://\(base.host!):\(base.port!)")
            #expect(host["rate"] as? String == "200/s")
            #expect(host["too_many_requests"] as? Int == stats.rejected, "\(host) \(stats)")
            #expect((host["pauses"] as? Int ?? 0) >= 1, "\(host)")
        }
    }
}
