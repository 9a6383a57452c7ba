import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `until:` and `when:` as the command runs them against the demo server's jobs
/// (`POST /jobs?polls=N`, `GET /jobs/{id}` done at the Nth poll): the shipped example, `-v`,
/// `--output json`, `--state`, a poll that gives up, `validate` and `graph`.
@Suite("orchestra: until and when", .serialized, .timeLimit(.minutes(3)), .takesTurns)
struct UntilWhenCommandTests {
    static let example = OrchestraExecutable.packageRoot.appendingPathComponent("Examples/poll-job.yaml").path

    static func steps(_ stdout: String) throws -> [String: [String: Any]] {
        let report = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]
        let steps = report?["steps"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: steps.map { ($0["id"] as? String ?? "", $0) })
    }

    @Test func theExamplePollsTheJobAndSkipsTheStepsWhoseConditionIsFalse() async throws {
        try await withDemoServer { server in
            let output = try await OrchestraExecutable.run([
                "run", Self.example, "--var", "base=\(server.baseURL.absoluteString)", "--output", "json",
            ])
            #expect(output.status == 0, "skips are not failures: \(output)")
            let steps = try Self.steps(output.stdout)
            let job = try #require(steps["job"])
            #expect(job["state"] as? String == "succeeded")
            #expect(job["poll_count"] as? Int == 3 && job["attempts"] as? Int == 3)
            let polls = job["polls"] as? [[String: Any]] ?? []
            #expect(polls.map { $0["passed"] as? Bool } == [false, false, true])
            #expect((polls.first?["failure"] as? String)?.contains("got \"running\"") == true, "\(polls)")
            #expect(server.arrivals(of: "/jobs/job-1") == 3, "one request per poll")
            #expect(steps["result"]?["state"] as? String == "succeeded")
            let slow = try #require(steps["slow-only"])
            #expect(slow["state"] as? String == "skipped" && slow["skipped_by_condition"] as? Bool == true)
            #expect(
                slow["error"] as? String == #"skipped: when "{{job.polls}} > 5" was false ({{job.polls}} is '3')"#)
            #expect(steps["traced"]?["state"] as? String == "skipped")
        }
    }

    @Test func verboseShowsEachPollAndAResumedRunDoesNotPollAgain() async throws {
        try await withDemoServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("until-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let state = folder.appendingPathComponent("run.db").path
            let base = ["--var", "base=\(server.baseURL.absoluteString)", "--var", "trace_id=t-1"]
            let first = try await OrchestraExecutable.run(["run", Self.example, "-v", "--state", state] + base)
            #expect(first.status == 0, "\(first)")
            #expect(first.stderr.contains("* job · poll 1: not yet (1 of 1 assertions failed: "), "\(first.stderr)")
            #expect(first.stderr.contains("; next in 200 ms"), "\(first.stderr)")
            #expect(first.stderr.contains("* job · poll 3: the checks hold"), "\(first.stderr)")
            #expect(first.stdout.contains("3 polls"), "\(first.stdout)")
            #expect(first.stdout.contains("✓ traced"), "exists: holds with --var trace_id=t-1: \(first.stdout)")
            let second = try await OrchestraExecutable.run(
                ["run", Self.example, "--state", state, "--output", "json"] + base)
            #expect(second.status == 0, "\(second)")
            #expect(try Self.steps(second.stdout)["job"]?["recorded"] as? Bool == true)
            #expect(server.arrivals(of: "/jobs/job-1") == 3, "the succeeded poll is not sent again")
        }
    }

    @Test func aPollThatNeverSucceedsFailsNamingTheLastCheckAndTheAttempts() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: start, method: POST, url: "{{vars.base}}/jobs?polls=100", captures: { id: $.id } }
                  - id: job
                    url: "{{vars.base}}/jobs/{{start.id}}"
                    until: { interval: 10ms, max_attempts: 4 }
                    assert: [ { $.status: done } ]
                  - { id: after, url: "{{vars.base}}/get", needs: [job] }
                """)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--no-color",
            ])
            #expect(output.status == 1, "\(output)")
            #expect(
                output.stdout.contains(
                    "until: the checks still failed after 4 attempts (max_attempts: 4); last: 1 of 1 assertions failed:"
                ),
                "\(output.stdout)")
            #expect(output.stdout.contains(#"✗ $.status == "done": got "running""#), "\(output.stdout)")
            #expect(output.stdout.contains("4 polls"), "\(output.stdout)")
            #expect(output.stdout.contains("skipped because 'job' did not succeed"), "\(output.stdout)")
            #expect(server.arrivals(of: "/jobs/job-1") == 4)
        }
    }

    @Test func validateNamesMistakesByLineAndGraphDrawsPollsAndConditions() async throws {
        let broken = try WorkflowCommandTests.workflowFile(
            """
            steps:
              - { id: a, url: "http://127.0.0.1:1/a", captures: { role: $.role } }
              - id: b
                url: "http://127.0.0.1:1/b"
                until: { interval: 2h, max_attempts: 0 }
                when: "{{a.rol}} == 'admin'"
            """)
        let validated = try await OrchestraExecutable.run(["validate", broken])
        #expect(validated.status == 2, "\(validated)")
        #expect(validated.stderr.contains(":5:24: error: step 'b', field 'until.interval'"), "\(validated.stderr)")
        #expect(validated.stderr.contains(":5:42: error: step 'b', field 'until.max_attempts'"), "\(validated.stderr)")
        #expect(
            validated.stderr.contains(":6:11: error: step 'b', field 'when': {{a.rol}}: step 'a' has no capture 'rol'"),
            "\(validated.stderr)")
        for format in ["dot", "mermaid"] {
            let graph = try await OrchestraExecutable.run(["graph", Self.example, "--format", format])
            #expect(graph.status == 0, "\(graph)")
            #expect(graph.stdout.contains("until ok: every 200 ms ×2 up to 2 s, at most 10 attempts"), "\(graph)")
            #expect(graph.stdout.contains("when "), "\(graph)")
        }
    }

    /// A `--data` row whose steps succeeded or were skipped by `when:` passes, and says so.
    @Test func aDataRowSaysWhichStepsItsConditionsSkipped() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: who, url: "{{vars.base}}/get?user={{data.user}}" }
                  - { id: admin, url: "{{vars.base}}/get?admin={{data.user}}", when: "{{data.role}} == 'admin'" }
                """)
            let rows = URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("rows.csv")
            try Data("user,role\nada,admin\nbob,user\n".utf8).write(to: rows)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--data", rows.path, "--no-color",
            ])
            #expect(output.status == 0, "\(output)")
            #expect(output.stdout.contains("✓ row 1  2 steps succeeded"), "\(output.stdout)")
            #expect(output.stdout.contains("✓ row 2  1 step succeeded, 1 skipped by when:"), "\(output.stdout)")
            #expect(server.arrivals(of: "/get") == 3)
        }
    }
}
