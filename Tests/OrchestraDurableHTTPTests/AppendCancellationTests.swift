import DurableStoreTestSupport
import Foundation
import HTTPTypes
import Orchestra
import OrchestraDurable
import OrchestraDurableHTTP
import OrchestraTestKit
import TestSupport
import Testing

/// A store whose appends wait for `gate`, and, like the PostgreSQL store's operations, stop at
/// their caller's cancellation.
final class GatedAppends: ForwardingJobStore {
    let base: any JobStore
    let gate = AsyncEvent()
    let appending = AsyncEvent()

    init(_ base: any JobStore) {
        self.base = base
    }

    func append(_ jobs: DurableSubmission) async throws -> Int {
        appending.signal()
        try await gate.wait()
        return try await base.append(jobs)
    }
}

@Suite("Durable HTTP: a cancelled request's append", .timeLimit(.minutes(1)), .takesTurns)
struct AppendCancellationTests {
    /// The request that leads an append batch carries the jobs of the requests that came while
    /// the batch before it was stored: its cancellation must not cut the append short. Here the
    /// leader is cancelled while its append waits; the append still stores its job, and the
    /// caller is told `CancellationError`.
    @Test func aRequestCancelledWhileItsAppendRunsStillAppendsTheBatch() async throws {
        try await DurableHTTPTransportTests.withStoreFile { path in
            let store = GatedAppends(try SQLiteJobStore(path: path))
            let queue = DurableQueue(store: store, worker: "producer")
            try await queue.open(runID: "gated", limit: 4)
            try await queue.withOutcomes(of: "gated") { outcomes in
                let transport = DurableHTTPTransport(queue: queue, runID: "gated", outcomes: outcomes)
                let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/a")
                let sending = Task { try await transport.send(request, body: nil) }
                try await withHangGuard { try await store.appending.wait() }
                sending.cancel()
                store.gate.signal()
                await #expect(throws: CancellationError.self) { try await withHangGuard { try await sending.value } }
                let jobs = try await queue.jobs(of: "gated")
                #expect(jobs.count == 1, "\(jobs)")
                #expect(transport.counts.appended == 1)
            }
        }
    }
}
