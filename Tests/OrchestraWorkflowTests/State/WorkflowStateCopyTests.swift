import Foundation
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// A copy of a state file taken while a run used it (the file alone, without its `-wal`) is
/// behind the run: resuming from it sent again 2,970 POSTs that had succeeded, with no "may
/// have been sent" guard. It is now known for a copy and refused unless forced; a file that
/// outlived a crash (its `-wal` beside it) resumes as before; `WorkflowStateSummary.backup`
/// copies one consistently.
@Suite("Copies of a --state file", .takesTurns)
struct WorkflowStateCopyTests {
    static let workflow = "steps:\n  - { id: a, url: \"http://x.test/a\" }"

    /// A transport that answers every request 200.
    static var server: ScriptedHTTPTransport {
        ScriptedHTTPTransport { _, _ in respond() }
    }

    @Test func aCopyTakenDuringARunIsRefusedUnlessForced() async throws {
        try await withStateFile { path in
            let workflow = try parse(Self.workflow)
            let copy = path + ".copy"
            let running = try WorkflowState.open(path: path, workflow: workflow, force: false)
            try withExtendedLifetime(running) {
                #expect(try WorkflowStateSummary.read(path: path).openRun == running.run)
                // The file alone, as `cp run.state backup` takes it during the run.
                try FileManager.default.copyItem(atPath: path, toPath: copy)
            }
            #expect(!FileManager.default.fileExists(atPath: copy + "-wal"))
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: copy, workflow: workflow, force: false)
            }
            #expect(error?.code == .behindItsRun)
            #expect(error?.message.contains("was copied while run 1 was using it") == true)
            #expect(error?.message.contains("--force") == true)
            // Refused, and left as it was.
            #expect(try WorkflowStateSummary.read(path: copy).runs == 1)
            let forced = try WorkflowState.open(path: copy, workflow: workflow, force: true)
            #expect(forced.run == 2)
        }
    }

    @Test func aFileThatOutlivedACrashResumes() async throws {
        try await withStateFile { path in
            let workflow = try parse(Self.workflow)
            let crashed = path + ".crashed"
            let running = try WorkflowState.open(path: path, workflow: workflow, force: false)
            try withExtendedLifetime(running) {
                // The file and its -wal as a killed process leaves them (it never closed them).
                try FileManager.default.copyItem(atPath: path, toPath: crashed)
                try FileManager.default.copyItem(atPath: path + "-wal", toPath: crashed + "-wal")
            }
            let resumed = try WorkflowState.open(path: crashed, workflow: workflow, force: false)
            #expect(resumed.run == 2)
        }
    }

    @Test func aRunThatEndsClearsItsMarkAndItsFileResumes() async throws {
        try await withStateFile { path in
            let workflow = try parse(Self.workflow)
            let report = try await runWithState(workflow, path: path, transport: Self.server)
            #expect(report.allSucceeded)
            #expect(try WorkflowStateSummary.read(path: path).openRun == nil)
            // Ended: the file alone is all there is (SQLite removed its -wal), and it resumes.
            let copy = path + ".copy"
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            #expect(try WorkflowState.open(path: copy, workflow: workflow, force: false).run == 2)
        }
    }

    @Test func aBackupIsConsistentAndSaysWhetherARunWasUnderWay() async throws {
        try await withStateFile { path in
            let workflow = try parse(Self.workflow)
            let during = path + ".during"
            do {
                let running = try WorkflowState.open(path: path, workflow: workflow, force: false)
                try withExtendedLifetime(running) {
                    let summary = try WorkflowStateSummary.backup(path: path, to: during)
                    #expect(summary.openRun == 1)
                }
            }
            #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: during, workflow: workflow, force: false)
            }
            let mode = try FileManager.default.attributesOfItem(atPath: during)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            #expect(try await runWithState(workflow, path: path, transport: Self.server).allSucceeded)
            let after = path + ".after"
            let summary = try WorkflowStateSummary.backup(path: path, to: after)
            #expect(summary.openRun == nil)
            #expect(try WorkflowStateSummary.read(path: after).steps.first?.succeeded == 1)
            #expect(try WorkflowState.open(path: after, workflow: workflow, force: false).run == 3)

            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowStateSummary.backup(path: path, to: after)
            }
            #expect(error?.message.contains("exists already") == true)
        }
    }
}
