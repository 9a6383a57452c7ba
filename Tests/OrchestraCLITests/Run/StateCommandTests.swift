import Foundation
import GRDB
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra run --state` and `orchestra status`, against the demo server.
@Suite("orchestra run --state and orchestra status", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct StateCommandTests {
    /// A state file path in a fresh folder, removed after `body`.
    static func withStatePath<T>(_ body: (String) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-cli-state-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(folder.appendingPathComponent("run.state").path)
    }

    static func workflow(base: URL, failing: Bool) throws -> String {
        try WorkflowCommandTests.workflowFile(
            """
            name: Resumable
            vars: { base: "\(base.absoluteString)" }
            steps:
              - { id: list, url: "{{vars.base}}/list/20", captures: { items: $.items } }
              - id: each
                for_each: "{{list.items}}"
                method: POST
                url: "{{vars.base}}/anything/state-items/{{item}}"
                headers: { Idempotency-Key: "item-{{item}}" }
                expect: [200]
                assert:
                  - $.url: { matches: "\(failing ? "^(?!.*/state-items/13$)" : ".")" }
            """)
    }

    @Test("a second run with the same --state sends only what failed; status shows where the run stands")
    func resume() async throws {
        try await withDemoServer { server in
            try await Self.withStatePath { state in
                let failing = try Self.workflow(base: server.baseURL, failing: true)
                let first = try await OrchestraExecutable.run(["run", failing, "--state", state, "--no-color"])
                #expect(first.status == 1, "\(first)")
                #expect(first.stdout.contains("state: \(state) (run 1)"), "\(first)")

                let status = try await OrchestraExecutable.run(["status", "--state", state, "--no-color"])
                #expect(status.status == 1, "incomplete: \(status)")
                #expect(status.stdout.contains("Resumable"), "\(status)")
                let line = try #require(status.stdout.split(separator: "\n").first { $0.contains("each") })
                #expect(line.split(separator: " ").map(String.init) == ["✗", "each", "19", "1", "0", "0", "of", "20"])

                // The same workflow without the failing check: a changed file needs --force.
                let fixed = try Self.workflow(base: server.baseURL, failing: false)
                let refused = try await OrchestraExecutable.run(["run", fixed, "--state", state])
                #expect(refused.status == 2, "\(refused)")
                #expect(refused.stderr.contains("--force"), "\(refused)")
                #expect(server.arrivals(of: "/anything/state-items/13") == 1, "nothing sent when refused")

                let before = server.requestCount
                let second = try await OrchestraExecutable.run([
                    "run", fixed, "--state", state, "--force", "--no-color",
                ])
                #expect(second.status == 0, "\(second)")
                #expect(server.requestCount - before == 1, "only the failed element: \(second)")
                #expect(server.arrivals(of: "/anything/state-items/13") == 2)
                #expect(second.stdout.contains("20 succeeded (19 recorded by an earlier run)"), "\(second)")
                #expect(second.stdout.contains("state: \(state) (run 2) · 20 requests recorded by earlier runs"))

                // A third run sends nothing; its JSON report marks what came from the file.
                let third = try await OrchestraExecutable.run([
                    "run", fixed, "--state", state, "--output", "json",
                ])
                #expect(third.status == 0, "\(third)")
                let report = try #require(
                    try JSONSerialization.jsonObject(with: Data(third.stdout.utf8)) as? [String: Any], "\(third)")
                let reported = try #require(report["steps"] as? [[String: Any]])
                #expect(reported.first?["recorded"] as? Bool == true)
                let items = try #require(reported.last?["items"] as? [[String: Any]])
                #expect(items.count == 20 && items.allSatisfy { $0["recorded"] as? Bool == true })
                #expect(items[13]["status"] as? Int == 200)

                let json = try await OrchestraExecutable.run(["status", "--state", state, "--output", "json"])
                #expect(json.status == 0, "\(json)")
                let document = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
                #expect(document["complete"] as? Bool == true)
                #expect(document["runs"] as? Int == 3)
                let steps = try #require(document["steps"] as? [[String: Any]])
                #expect(steps.map { $0["id"] as? String } == ["list", "each"])
                #expect(steps[1]["succeeded"] as? Int == 20 && steps[1]["pending"] as? Int == 0)
            }
        }
    }

    @Test(
        "--state options used wrongly and unusable state files exit 2 naming the problem",
        arguments: [
            (["--force"], "--force lets --state use another workflow's state file"),
            (["--resend-uncertain"], "--resend-uncertain resumes a --state file"),
            (["--state", "STATE", "--data", "ROWS"], "it does not take a --data run"),
            (["--state", "WORKFLOW"], "is not a SQLite database"),
            (["--state", "FOLDER"], "is a directory"),
            (["--state", "/dev/null"], "/dev/null is not a regular file"),
            (["--state", "/nonexistent/orchestra/run.state"], "the folder /nonexistent/orchestra does not exist"),
        ])
    func misuse(options: [String], message: String) async throws {
        try await Self.withStatePath { state in
            let folder = URL(fileURLWithPath: state).deletingLastPathComponent()
            let workflow = try WorkflowCommandTests.workflowFile("steps:\n  - { id: a, url: \"http://127.0.0.1:9/a\" }")
            let rows = folder.appendingPathComponent("rows.csv")
            try Data("x\n1\n".utf8).write(to: rows)
            let arguments = options.map {
                switch $0 {
                case "STATE": state
                case "ROWS": rows.path
                case "WORKFLOW": workflow
                case "FOLDER": folder.path
                default: $0
                }
            }
            let result = try await OrchestraExecutable.run(["run", workflow] + arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains(message), "\(result)")
        }
    }

    @Test(
        "status --backup copies a state file; a run resumes from it, and refuses a copy taken during a run unless --force"
    )
    func backup() async throws {
        try await withDemoServer { server in
            try await Self.withStatePath { state in
                let failing = try Self.workflow(base: server.baseURL, failing: true)
                let first = try await OrchestraExecutable.run(["run", failing, "--state", state, "--no-color"])
                #expect(first.status == 1, "\(first)")

                let copy = state + ".backup"
                let backup = try await OrchestraExecutable.run(["status", "--state", state, "--backup", copy])
                #expect(backup.status == 1, "incomplete: \(backup)")
                #expect(backup.stderr.contains("backed up \(state) to \(copy)"), "\(backup)")
                #expect(!backup.stderr.contains("needs --force"), "no run was under way: \(backup)")
                let again = try await OrchestraExecutable.run(["status", "--state", state, "--backup", copy])
                #expect(again.status == 2, "\(again)")
                #expect(again.stderr.contains("exists already"), "\(again)")

                // The backup of an ended run resumes: the failed element only is sent again.
                let resumed = try await OrchestraExecutable.run(["run", failing, "--state", copy, "--no-color"])
                #expect(resumed.status == 1, "\(resumed)")
                #expect(resumed.stdout.contains("(run 2)"), "\(resumed)")
                #expect(server.arrivals(of: "/anything/state-items/13") == 2, "\(resumed)")

                // A copy of the file alone taken during a run: the run's mark is in it, its -wal
                // is not beside it.
                let during = state + ".during"
                try FileManager.default.copyItem(atPath: state, toPath: during)
                let database = try DatabaseQueue(path: during)
                try await database.write { try $0.execute(sql: "UPDATE workflow SET open_run = runs + 1") }
                try database.close()
                let status = try await OrchestraExecutable.run(["status", "--state", during, "--no-color"])
                #expect(status.stdout.contains("run 2 has not ended in this file"), "\(status)")
                let before = server.requestCount
                let refused = try await OrchestraExecutable.run(["run", failing, "--state", during])
                #expect(refused.status == 2, "\(refused)")
                #expect(refused.stderr.contains("was copied while run 2 was using it"), "\(refused)")
                #expect(server.requestCount == before, "nothing sent when refused")
                let forced = try await OrchestraExecutable.run(["run", failing, "--state", during, "--force"])
                #expect(forced.status == 1, "\(forced)")
                #expect(!forced.stderr.contains("was copied"), "\(forced)")
            }
        }
    }

    @Test("status of a file that is not a state file exits 2 naming it")
    func statusOfABadFile() async throws {
        let missing = try await OrchestraExecutable.run(["status", "--state", "/nonexistent/run.state"])
        #expect(missing.status == 2, "\(missing)")
        #expect(missing.stderr.contains("/nonexistent/run.state: no such state file"), "\(missing)")
        let workflow = try WorkflowCommandTests.workflowFile("steps:\n  - { id: a, url: \"http://127.0.0.1:9/a\" }")
        let text = try await OrchestraExecutable.run(["status", "--state", workflow])
        #expect(text.status == 2, "\(text)")
        #expect(text.stderr.contains("not a SQLite database"), "\(text)")
    }
}
