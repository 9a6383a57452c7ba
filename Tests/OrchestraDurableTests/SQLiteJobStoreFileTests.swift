import Foundation
import GRDB
import TestSupport
import Testing

@testable import OrchestraDurable

/// A file that is not an Orchestra store of a version this build reads gets a named error.
@Suite("SQLite job store files", .timeLimit(.minutes(1)), .takesTurns)
struct SQLiteJobStoreFileTests {
    @Test func aFileThatIsNotADatabaseIsRefusedByName() async throws {
        try await withTemporaryStore { file in
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: file.path))
            let error = await #expect(throws: DurableError.self) { try await file.open() }
            #expect(error?.code == .notADatabase)
            #expect(error?.message.hasPrefix("\(file.path) is not a SQLite database") == true)
        }
    }

    @Test func anotherProgramsDatabaseIsRefusedByName() async throws {
        try await withTemporaryStore { file in
            try await DatabaseQueue(path: file.path).write { db in
                try db.execute(sql: "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
            }
            let error = await #expect(throws: DurableError.self) { try await file.open() }
            #expect(error?.code == .foreignDatabase)
            #expect(error?.message.contains("tables: customers") == true)
        }
    }

    @Test func aStoreFromANewerVersionIsRefusedAndLeftAlone() async throws {
        try await withTemporaryStore { file in
            _ = try await file.open()
            try await DatabaseQueue(path: file.path).write { db in
                try db.execute(sql: "UPDATE orchestra_store SET value = '99' WHERE key = 'schema'")
            }
            let error = await #expect(throws: DurableError.self) { try await file.open() }
            #expect(error?.code == .schemaFromNewerVersion)
            #expect(error?.message.contains("schema version 99") == true)
            let version = try await DatabaseQueue(path: file.path).read { db in
                try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'schema'")
            }
            #expect(version == "99")
        }
    }

    @Test func reopeningAStoreKeepsItsRunsAndItsJournalIsWAL() async throws {
        try await withTemporaryStore { file in
            let queue = DurableQueue(store: try await file.open(), wallClockStart: epoch)
            try await queue.submit(try DurableQueueTests.diamond(), runID: "kept")
            let reopened = DurableQueue(store: try await file.open(), wallClockStart: epoch)
            #expect(try await reopened.jobs(of: "kept").map(\.id) == ["a", "b", "c", "d"])
            let mode = try await DatabaseQueue(path: file.path).read { db in
                try String.fetchOne(db, sql: "PRAGMA journal_mode")
            }
            #expect(mode == "wal")
        }
    }

    @Test func aRunThatCanNeverGoOnEndsTheDrainWithANamedErrorInsteadOfWaiting() async throws {
        try await withTemporaryStore { file in
            let queue = DurableQueue(store: try await file.open(), wallClockStart: epoch)
            DurableQueueTests.registerAdd(on: queue)
            var graph = DurableGraph()
            try graph.add("a", add, input: [1])
            try graph.add("b", add, input: [2], after: ["a"])
            try await queue.submit(graph, runID: "edited")
            // Edited by hand: `a` marked done without releasing `b`.
            try await DatabaseQueue(path: file.path).write { db in
                try db.execute(sql: "UPDATE jobs SET state = 'succeeded', output = '1' WHERE id = 'a'")
            }
            let error = await #expect(throws: DurableError.self) { try await queue.drain() }
            #expect(error?.code == .storeFailed)
            #expect(error?.message.contains("can never become ready") == true)
        }
    }
}
