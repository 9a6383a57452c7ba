import Foundation
import OrchestraDurable
import OrchestraPostgres
import PostgresNIO

// The stores of the durable tests, shared by OrchestraDurableTests (the engine on every store)
// and OrchestraPostgresTests (what only the PostgreSQL store does). Not a product.

/// Which store a test runs against.
package enum StoreKind: String, Sendable {
    case sqlite, postgres

    /// SQLite always; PostgreSQL when `ORCHESTRA_POSTGRES_URL` names a server
    /// (`eval "$(Scripts/postgres.sh start)"` starts one; `.ci/run` does).
    package static var available: [StoreKind] { PostgresTestServer.url == nil ? [.sqlite] : [.sqlite, .postgres] }
}

/// The PostgreSQL server of the tests, if there is one.
package enum PostgresTestServer {
    package static let url = ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }
    /// Whether the tests run in CI, where PostgreSQL must be there.
    package static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
    package static let skipMessage =
        "no PostgreSQL: set ORCHESTRA_POSTGRES_URL (eval \"$(Scripts/postgres.sh start)\" starts a throwaway server)"

    /// Thrown by ``withTemporaryStore(_:_:)`` for a PostgreSQL store when there is no server.
    package struct Missing: Error, CustomStringConvertible {
        package var description: String { PostgresTestServer.skipMessage }
    }
}

/// A store of its own for each test, removed afterwards: a SQLite file, or a PostgreSQL schema.
package struct TemporaryStore: Sendable {
    package let kind: StoreKind
    package let path: String
    package let client: PostgresClient?
    package let schema: String

    /// A new store object over the test's store, as a process that starts again would open it.
    package func open() async throws -> any JobStore {
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
package func withTemporaryStore<T: Sendable>(
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
        guard let url = PostgresTestServer.url else { throw PostgresTestServer.Missing() }
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

/// Waits until the task is cancelled.
package func untilCancelled() async {
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    for await _ in stream {}
    continuation.finish()
}
