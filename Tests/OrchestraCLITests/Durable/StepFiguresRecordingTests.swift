import Foundation
import OrchestraDurable
import OrchestraPostgres
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

@testable import OrchestraCLI

/// A distributed run's coordinator writes its steps' figures to the run while it goes, for
/// `orchestra status`: at once for a new run, then whenever they have changed.
@Suite(
    "orchestra run --state postgres://…: the steps' figures written as the run goes",
    .enabled(
        if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil,
        "no PostgreSQL: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL"),
    .timeLimit(.minutes(2)), .takesTurns)
struct StepFiguresRecordingTests {
    /// `name succeeded/failed/may have been sent` of each step the store holds for run `run`.
    static func stored(_ store: PostgresJobStore) async throws -> [String] {
        try await store.steps(of: "run").map { "\($0.step) \($0.succeeded)/\($0.failed)/\($0.maybeSent)" }
    }

    /// `orchestra status` of run `runID` in `schema`, as text (its output, and its lines split
    /// into words) and as JSON (the run's object).
    static func status(
        of runID: String, in schema: String
    ) async throws -> (text: ProcessOutput, lines: [[String]], run: [String: Any]) {
        let arguments = ["status", "--state", DistributedRunTests.url, "--schema", schema, "--run", runID]
        let text = try await OrchestraExecutable.run(arguments + ["--no-color"])
        let json = try await OrchestraExecutable.run(arguments + ["--output", "json"])
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let run = try #require((document["runs"] as? [[String: Any]])?.first, "\(json)")
        return (text, text.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }, run)
    }

    @Test("written at the start, again after a change, not again without one")
    func writtenWhenChanged() async throws {
        let workflow = try Workflow.parse(
            """
            steps:
              - { id: login, url: "http://x.test/login" }
              - { id: ping, url: "http://x.test/ping" }
            """, file: "flow.yaml")
        try await DistributedRunTests.withSchema { schema in
            try await PostgresJobStore.withStore(url: DistributedRunTests.url, schema: schema, pollInterval: nil) {
                store in
                #expect(try await DurableQueue(store: store).open(runID: "run"))
                let tally = WorkflowStepTally(workflow: workflow)
                let clock = ManualClock()
                let recorder = StepRecorder(tally: tally, store: store, runID: "run", from: -1)
                let recording = Task { await recorder.keepRecording(clock: clock) }
                defer { recording.cancel() }
                // The loop records, then sleeps: once it sleeps, the first record is in.
                try await clock.waitForSleepers(1)
                #expect(try await Self.stored(store) == ["login 0/0/0", "ping 0/0/0"])

                tally.observe(
                    .finished(StepReport(id: "login", state: .succeeded, method: "GET", url: "http://x.test/login")))
                #expect(clock.advance(by: StepRecorder.interval) == 1)
                try await clock.waitForSleepers(1)
                #expect(try await Self.stored(store) == ["login 1/0/0", "ping 0/0/0"])

                // Nothing new: what the store holds is left as it is.
                try await store.recordSteps([], of: "run")
                #expect(clock.advance(by: StepRecorder.interval) == 1)
                try await clock.waitForSleepers(1)
                #expect(try await Self.stored(store).isEmpty)
            }
        }
    }

    @Test(
        "a request refused by its server is a job that succeeded and a step that failed: status judges the run by its steps, exit 1"
    )
    func aRunIsJudgedByItsSteps() async throws {
        // Port 1: nothing listens, every connection is refused, on the worker.
        let file = try WorkflowCommandTests.workflowFile(
            """
            steps:
              - { id: refused, url: "http://127.0.0.1:1/nothing", retry: 1 }
            """)
        try await DistributedRunTests.withSchema { schema in
            let run = try await DistributedRunTests.run(file, schema: schema, runID: "refused", workers: 1)
            #expect(run.status == 1, "\(run)")
            let (status, lines, only) = try await Self.status(of: "refused", in: schema)
            #expect(status.status == 1, "\(status)")
            // The run's row: its jobs all succeeded, yet it is marked as not done.
            #expect(
                lines.contains { $0.prefix(4) == ["✗", "refused", "succeeded", "1"] && $0.dropLast().last == "0/1" },
                "\(status)")
            #expect(lines.contains { $0 == ["✗", "refused", "0", "1", "0", "0"] }, "\(status)")
            #expect(only["state"] as? String == "succeeded" && only["complete"] as? Bool == false, "\(only)")
        }
    }

    @Test("a step its when: skipped is shown skipped, not pending: a run that succeeded is complete, exit 0")
    func aStepSkippedByAWhenIsNotPending() async throws {
        try await DistributedRunTests.withServerAndSchema { server, schema in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { go: "no" }
                steps:
                  - { id: ping, url: "\(server.baseURL.absoluteString)/users/1" }
                  - { id: maybe, url: "\(server.baseURL.absoluteString)/users/2", when: "{{vars.go}} == yes" }
                """)
            let run = try await DistributedRunTests.run(file, schema: schema, runID: "when", workers: 1)
            #expect(run.status == 0, "\(run)")
            let (status, lines, only) = try await Self.status(of: "when", in: schema)
            #expect(status.status == 0, "\(status)")
            #expect(lines.contains { $0 == ["–", "maybe", "0", "0", "0", "skipped", "(when)"] }, "\(status)")
            #expect(only["complete"] as? Bool == true, "\(only)")
            let steps = try #require(only["steps"] as? [[String: Any]], "\(only)")
            #expect(steps.map { $0["skipped"] as? Bool } == [false, true], "\(only)")
            #expect(steps.map { $0["pending"] as? Int } == [0, 0], "\(only)")
        }
    }
}
