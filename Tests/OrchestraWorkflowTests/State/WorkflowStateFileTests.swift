import Foundation
import GRDB
import OrchestraDurable
import OrchestraWorkflow
import TestSupport
import Testing

/// A file that cannot be a run's state file gets a named error, and is left as it was.
@Suite("--state files that cannot be used", .takesTurns)
struct WorkflowStateFileTests {
    static let workflow = "steps:\n  - { id: a, url: \"http://x.test/a\" }"

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAsItWas() async throws {
        try await withStateFile { path in
            let text = Data("not a database, just some text that is long enough\n".utf8)
            try text.write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: path, workflow: try parse(Self.workflow), force: false)
            }
            #expect(error?.code == .notAStateFile)
            #expect(error?.message.contains(path) == true)
            #expect(FileManager.default.contents(atPath: path) == text)
        }
    }

    @Test func anotherProgramsDatabaseIsRefused() async throws {
        try await withStateFile { path in
            let database = try DatabaseQueue(path: path)
            try await database.write { try $0.execute(sql: "CREATE TABLE contacts (name TEXT)") }
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: path, workflow: try parse(Self.workflow), force: false)
            }
            #expect(error?.code == .foreignFile)
            #expect(error?.message.contains("contacts") == true)
        }
    }

    @Test func aDurableJobStoreIsNotAStateFile() async throws {
        try await withStateFile { path in
            _ = try SQLiteJobStore(path: path)
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: path, workflow: try parse(Self.workflow), force: false)
            }
            #expect(error?.code == .foreignFile)
            #expect(error?.message.contains("orchestra-durable") == true)
        }
    }

    @Test func aStateFileFromANewerVersionIsRefused() async throws {
        try await withStateFile { path in
            _ = try WorkflowState.open(path: path, workflow: try parse(Self.workflow), force: false)
            let database = try DatabaseQueue(path: path)
            try await database.write {
                try $0.execute(sql: "UPDATE orchestra_store SET value = '99' WHERE key = 'schema'")
            }
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowStateSummary.read(path: path)
            }
            #expect(error?.code == .newerSchema)
            #expect(error?.message.contains("99") == true)
        }
    }

    @Test func oneRunAtATimeMayUseAStateFile() async throws {
        try await withStateFile { path in
            let workflow = try parse(Self.workflow)
            let first = try WorkflowState.open(path: path, workflow: workflow, force: false)
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: path, workflow: workflow, force: false)
            }
            #expect(error?.code == .inUse)
            #expect(first.run == 1)
            // The summary only reads: it may look while a run uses the file.
            #expect(try WorkflowStateSummary.read(path: path).runs == 1)
        }
    }

    @Test func aMissingFileHasNoSummary() throws {
        let error = #expect(throws: WorkflowStateError.self) {
            try WorkflowStateSummary.read(path: "/nonexistent/orchestra/run.state")
        }
        #expect(error?.code == .missing)
    }

    @Test func aNewStateFileIsReadableByItsOwnerOnly() async throws {
        try await withStateFile { path in
            _ = try WorkflowState.open(path: path, workflow: try parse(Self.workflow), force: false)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }
}
