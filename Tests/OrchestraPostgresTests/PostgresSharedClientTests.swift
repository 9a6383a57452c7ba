import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// The claims and outcomes go through prepared statements that name their tables without
/// their schema (`PreparedStatements`): a store sets the `search_path` of each transaction
/// when its client was given to it. Two stores in two schemas over one client of one
/// connection, each claim and outcome of one followed by one of the other, so every
/// statement is planned for one schema and run next for the other: each store sees only its
/// own jobs, and both runs end. The app's temporary table named `jobs` on that connection does
/// not stand in for theirs.
@Suite(
    "PostgresJobStore: stores of two schemas over one client",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(2)), .takesTurns)
struct PostgresSharedClientTests {
    static let step = JobKind<Int, Int>("step")
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func eachStoreClaimsAndRecordsOnlyItsOwnJobsOnAConnectionTheyShare() async throws {
        try await withTemporaryStore(.postgres) { first in
            try await withTemporaryStore(.postgres) { second in
                var (configuration, _) = try PostgresJobStore.configuration(url: PostgresTestServer.url!)
                configuration.options.maximumConnections = 1
                let client = PostgresClient(configuration: configuration)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await client.run() }
                    defer { group.cancelAll() }
                    try await client.query("CREATE TEMPORARY TABLE jobs (id TEXT, state TEXT)")
                    try await Self.alternate(client: client, schemas: [first.schema, second.schema])
                }
            }
        }
    }

    /// A chain of 6 jobs in run `run` of each schema (the same run id in both), run link by
    /// link, the stores taking turns.
    static func alternate(client: PostgresClient, schemas: [String]) async throws {
        var stores: [PostgresJobStore] = []
        for schema in schemas {
            let store = try PostgresJobStore(client: client, schema: schema, pollInterval: nil)
            try await store.migrate()
            var graph = DurableGraph()
            for link in 0..<6 {
                try graph.add("\(schema)-\(link)", step, input: link, after: link == 0 ? [] : ["\(schema)-\(link - 1)"])
            }
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            #expect(try await queue.submit(graph, runID: "run", limit: 4))
            stores.append(store)
        }
        let claim = Claim(
            worker: "w", kinds: [step.name], limit: 4, now: epoch, leaseExpiry: epoch.addingTimeInterval(3_600))
        var held: [ClaimedJob?] = Array(repeating: nil, count: stores.count)
        for link in 0...6 {
            for (index, store) in stores.enumerated() {
                let outcomes = held[index].map { [AttemptOutcome(job: $0, outcome: .succeeded(Data("\(link)".utf8)))] }
                let (recorded, claimed) = try await store.record(outcomes ?? [], thenClaim: claim, now: epoch)
                #expect(recorded.map(\.recorded) == Array(repeating: true, count: outcomes?.count ?? 0))
                let expected = link < 6 ? ["\(schemas[index])-\(link)"] : []
                #expect(claimed.map(\.key.jobID) == expected, "store \(schemas[index]), link \(link)")
                if link > 0, let job = claimed.first {
                    #expect(job.dependencyOutputs == ["\(schemas[index])-\(link - 1)": Data("\(link)".utf8)])
                }
                held[index] = claimed.first
            }
        }
        for store in stores {
            #expect(try await store.run("run")?.state == .succeeded)
            #expect(try await store.jobs(of: "run").map(\.state) == Array(repeating: .succeeded, count: 6))
        }
    }
}
