import Foundation
import Orchestra
import OrchestraDurable
import OrchestraPostgres
import OrchestraTestKit
import PostgresNIO
import Testing

/// Which store a test runs against.
enum StoreKind: String, CustomTestStringConvertible, Sendable {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL when `ORCHESTRA_POSTGRES_URL` names a server
    /// (`eval "$(Scripts/postgres.sh start)"` starts one; `.ci/run` does).
    static var available: [StoreKind] { PostgresTestServer.url == nil ? [.sqlite] : [.sqlite, .postgres] }
}

/// The PostgreSQL server of the tests, if there is one.
enum PostgresTestServer {
    static let url = ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// Whether the tests run in CI, where PostgreSQL must be there.
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
    static let skipMessage =
        "no PostgreSQL: set ORCHESTRA_POSTGRES_URL (eval \"$(Scripts/postgres.sh start)\" starts a throwaway server)"
}

/// A store of its own for each test, removed afterwards: a SQLite file, or a PostgreSQL schema.
struct TemporaryStore: Sendable {
    let kind: StoreKind
    let path: String
    let client: PostgresClient?
    let schema: String

    /// A new store object over the test's store, as a process that starts again would open it.
    func open() async throws -> any JobStore {
        switch kind {
        case .sqlite:
            return try SQLiteJobStore(path: path)
        case .postgres:
            // No polling: idle workers wait on the manual clock for due times and notifications.
            let store = try PostgresJobStore(
                client: client!, schema: schema, location: "the test server", pollInterval: nil)
            try await store.migrate()
            return store
        }
    }
}

/// Runs `body` with a temporary store of `kind`, removed however `body` ends.
func withTemporaryStore<T: Sendable>(
    _ kind: StoreKind = .sqlite, _ body: (TemporaryStore) async throws -> T
) async throws -> T {
    let name = "t_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "_"))"
    switch kind {
    case .sqlite:
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-durable-\(name).sqlite")
            .path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        return try await body(TemporaryStore(kind: kind, path: path, client: nil, schema: name))
    case .postgres:
        let url = try #require(PostgresTestServer.url, Comment(rawValue: PostgresTestServer.skipMessage))
        let (configuration, _) = try PostgresJobStore.configuration(url: url)
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = TemporaryStore(kind: kind, path: "", client: client, schema: name)
            do {
                let result = try await body(store)
                try await client.query("DROP SCHEMA IF EXISTS \(unescaped: name) CASCADE")
                return result
            } catch {
                _ = try? await client.query("DROP SCHEMA IF EXISTS \(unescaped: name) CASCADE")
                throw error
            }
        }
    }
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
