import DurableStoreTestSupport
import Foundation
import Logging
import Orchestra
import OrchestraPostgres
import OrchestraTestKit
import ServiceLifecycle
import TestSupport
import Testing

@testable import OrchestraDurable

@Suite("DurableWorkerService, a worker in a service group", .timeLimit(.minutes(1)), .takesTurns)
struct DurableWorkerServiceTests {
    static let held = JobKind<String, String>("held")

    @Test(arguments: StoreKind.available) func theServiceGivesItsJobsBackWhenItsGroupShutsDownGracefully(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let queue = DurableQueue(store: store, leaseDuration: .seconds(600))
            let started = Locked(0)
            queue.register(Self.held) { input, _ in
                started.withLock { $0 += 1 }
                await untilCancelled()
                throw CancellationError()
            }
            var graph = DurableGraph()
            for index in 1...3 { try graph.add("job-\(index)", Self.held, input: "out-\(index)") }
            try await queue.submit(graph, runID: "served")
            // No grace period: the running job is given back at once (no real time waited).
            let group = ServiceGroup(
                services: [DurableWorkerService(queue: queue, limit: 1, gracePeriod: .zero)],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            let running = Task { try await group.run() }
            try await waitUntil("the first job runs") { started.withLock { $0 } == 1 }
            await group.triggerGracefulShutdown()
            try await withHangGuard { try await running.value }
            #expect(started.withLock { $0 } == 1, "a job was claimed during the shutdown")
            // Its lease was for ten minutes; given back, another worker takes it now.
            let taken = try await store.claim(
                worker: "other", kinds: ["held"], limit: 8, now: Date(), leaseExpiry: Date().addingTimeInterval(60))
            #expect(taken.map(\.key.jobID).sorted() == ["job-1", "job-2", "job-3"])
            #expect(taken.map(\.attempt).sorted() == [1, 1, 2])
        }
    }
}
