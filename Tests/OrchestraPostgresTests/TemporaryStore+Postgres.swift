import DurableStoreTestSupport
import Logging
import PostgresNIO

@testable import OrchestraPostgres

extension TemporaryStore {
    /// A store over this PostgreSQL schema whose tries run `tries` (a test's hooks on how a
    /// try is given up, and on what follows each try's transaction).
    func postgresStore(tries: PostgresJobStore.TryHooks) throws -> PostgresJobStore {
        try PostgresJobStore(
            client: client!, schema: schema, location: "the test server", pollInterval: nil,
            logger: Logger(label: "test"), outageTolerance: .seconds(60), connectivity: ConnectivityWatch(nil),
            diagnose: nil, tries: tries)
    }

    /// The ids of this PostgreSQL store's jobs in `state`, sorted.
    func jobIDs(in state: String) async throws -> [String] {
        var ids: [String] = []
        for try await id in try await client!.query(
            "SELECT id FROM \(unescaped: schema).jobs WHERE state = \(state) ORDER BY id"
        ).decode(String.self) {
            ids.append(id)
        }
        return ids
    }
}
