import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// A resource's rate across several workers on one PostgreSQL store: they claim through one
/// pace, so together they start no more than the rate. (The rule and the injected-time claims
/// of both stores: ResourceRateTests.)
@Suite(
    "PostgresJobStore: resource rates across workers",
    .enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)),
    .timeLimit(.minutes(1)), .takesTurns)
struct PostgresRateTests {
    static let add = JobKind<[Int], Int>("add")

    /// A store that writes down, with the real clock, the instant of every job its claims
    /// granted (the claim's `now`, the instant the rate was enforced at), then forwards.
    final class RecordingStore: ReleaseTimes, ForwardingJobStore {
        let store: PostgresJobStore
        let grants = Locked([Date]())
        var base: any JobStore { store }

        init(_ store: PostgresJobStore) { self.store = store }

        func recordAndClaim(
            _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
        ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob], nextRelease: Date?) {
            let result = try await store.recordAndClaim(outcomes, thenClaim: claim, now: now)
            if let claim { grants.withLock { $0 += Array(repeating: claim.now, count: result.claimed.count) } }
            return result
        }

        func record(
            _ outcomes: [AttemptOutcome], thenClaim claim: Claim?, now: Date
        ) async throws -> (recorded: [RecordedOutcome], claimed: [ClaimedJob]) {
            let (recorded, claimed, _) = try await recordAndClaim(outcomes, thenClaim: claim, now: now)
            return (recorded, claimed)
        }
    }

    /// Claimers on connections of their own, claiming at the same instant: the pace is read and
    /// moved on under the claim lock, so together they take what one would.
    @Test func concurrentClaimsAtOneInstantShareThePace() async throws {
        try await withTemporaryStore(.postgres) { file in
            var stores: [PostgresJobStore] = []
            for _ in 0..<3 {
                let store = try PostgresJobStore(client: file.client!, schema: file.schema, pollInterval: nil)
                try await store.migrate()
                stores.append(store)
            }
            let epoch = Date(timeIntervalSince1970: 1_800_000_000)
            let queue = DurableQueue(store: stores[0], clock: ManualClock(), wallClockStart: epoch)
            var graph = DurableGraph()
            for index in 0..<30 {
                try graph.add("j\(index)", Self.add, input: [index], options: .init(resources: ["api"]))
            }
            try await queue.submit(
                graph, runID: "r", limit: 100, resourceRates: ["api": DurableRate(.perSecond(10), burst: 2)])
            let all = stores
            func claimTogether(at seconds: Double) async throws -> Int {
                let now = epoch.addingTimeInterval(seconds)
                return try await withThrowingTaskGroup(of: Int.self) { group in
                    for (index, store) in all.enumerated() {
                        group.addTask {
                            try await store.claim(
                                worker: "w\(index)", kinds: [Self.add.name], limit: 10, now: now,
                                leaseExpiry: now.addingTimeInterval(3_600)
                            ).count
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            #expect(try await claimTogether(at: 0) == 2, "the burst, once")
            #expect(try await claimTogether(at: 0.1) == 1)
            #expect(try await claimTogether(at: 0.15) == 0)
            #expect(try await claimTogether(at: 0.2) == 1)
        }
    }

    /// The most instants of `instants` within any window of `width` seconds (`[t, t + width)`).
    static func busiestWindow(_ instants: [Date], width: TimeInterval) -> Int {
        let sorted = instants.sorted()
        var busiest = 0
        var end = 0
        for (start, instant) in sorted.enumerated() {
            while end < sorted.count, sorted[end].timeIntervalSince(instant) < width { end += 1 }
            busiest = max(busiest, end - start)
        }
        return busiest
    }

    /// Three workers (queues of their own over one schema) on a run whose resource has
    /// `30/s`, burst 3, over 90 jobs (about 3 s): in no second do they start more than 33 in
    /// all, where three limiters of their own would start 90. Real time, bounded; it asserts the
    /// upper bound only, never a duration.
    @Test func threeWorkersTogetherStartNoMoreThanTheRate() async throws {
        let (rate, burst, jobCount) = (30, 3, 90)
        try await withTemporaryStore(.postgres) { file in
            var stores: [RecordingStore] = []
            var queues: [DurableQueue] = []
            for index in 0..<3 {
                let base = try PostgresJobStore(client: file.client!, schema: file.schema, pollInterval: .seconds(1))
                try await base.migrate()
                let store = RecordingStore(base)
                let queue = DurableQueue(store: store, worker: "worker-\(index)")
                queue.register(Self.add) { input, _ in input[0] }
                stores.append(store)
                queues.append(queue)
            }
            var graph = DurableGraph()
            for index in 0..<jobCount {
                try graph.add("j\(index)", Self.add, input: [index], options: .init(resources: ["api"]))
            }
            try await queues[0].submit(
                graph, runID: "paced", limit: 32, resourceRates: ["api": DurableRate(.perSecond(rate), burst: burst)])
            let all = queues
            try await withHangGuard(.seconds(40)) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for queue in all { group.addTask { try await queue.drain(limit: 8) } }
                    try await group.waitForAll()
                }
            }
            let grants = stores.flatMap { $0.grants.withLock { $0 } }
            #expect(grants.count == jobCount, "every job claimed once")
            let busiest = Self.busiestWindow(grants, width: 1)
            #expect(busiest <= rate + burst, "at most \(rate + burst) starts in any second, across the workers")
            #expect(try await queues[0].run("paced").state == .succeeded)
        }
    }
}
