import Foundation
import Orchestra
import OrchestraDurable
import OrchestraTestKit

/// A store file of its own for each test, removed afterwards.
struct TemporaryStore {
    let path: String

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-durable-\(UUID()).sqlite").path
    }

    func open() throws -> SQLiteJobStore { try SQLiteJobStore(path: path) }

    func remove() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

/// Runs `body` with a temporary store, removed however `body` ends.
func withTemporaryStore<T>(_ body: (TemporaryStore) async throws -> T) async throws -> T {
    let store = TemporaryStore()
    defer { store.remove() }
    return try await body(store)
}

let add = JobKind<[Int], Int>("add")
let wait = JobKind<String, String>("wait")

/// A fixed date the manual clock's zero stands for.
let epoch = Date(timeIntervalSince1970: 1_800_000_000)

/// Waits until the task is cancelled.
func untilCancelled() async {
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    for await _ in stream {}
    continuation.finish()
}
