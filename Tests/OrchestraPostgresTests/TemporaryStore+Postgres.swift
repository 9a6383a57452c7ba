import DurableStoreTestSupport
import Logging
import Orchestra
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

    /// A store whose first try of its first operation, once its transaction ended (committed),
    /// waits until it was given up, and then until `release`, as on a machine too busy to hear
    /// the answer in time; every later try runs as usual (its timer waits for `release`).
    func postgresStoreGivingUpItsFirstTry(release: AsyncEvent) throws -> PostgresJobStore {
        let firstEnded = AsyncEvent()
        let firstTryToCome = Locked(true)
        return try postgresStore(
            tries: .init(
                timer: { number, _ in
                    let isFirst = number == 1 && firstTryToCome.withLock { $0 }
                    if isFirst { try? await firstEnded.wait() } else { try? await release.wait() }
                },
                afterTry: { number in
                    guard number == 1, firstTryToCome.withLock({ $0 }) else { return }
                    firstTryToCome.withLock { $0 = false }
                    firstEnded.signal()
                    try? await release.wait()
                }))
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
