import Foundation
import HTTPTypes
import Orchestra
import OrchestraDurable
import OrchestraDurableHTTP
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

/// A request's timeout, handed to durable workers, bounds each attempt on a worker: not the
/// time its job waits for a worker, nor a failover.
@Suite(
    "Durable HTTP: a request's timeout is its attempt's time limit on a worker", .timeLimit(.minutes(1)), .takesTurns)
struct DurableHTTPTimeoutTests {
    /// Runs `body` with a transport on run `runID` of a fresh store and its queue, whose clock
    /// (the workers' time limits and leases) is `clock`.
    static func withTransport<T: Sendable>(
        clock: ManualClock, server: ScriptedHTTPTransport, runID: String,
        _ body: (DurableQueue, DurableHTTPTransport) async throws -> T
    ) async throws -> T {
        try await DurableHTTPTransportTests.withStoreFile { path in
            let queue = DurableQueue(store: try SQLiteJobStore(path: path), worker: "in-process", clock: clock)
            queue.registerHTTPJobs(sendingThrough: server)
            try await queue.open(runID: runID, limit: 4, resourceLimits: [:])
            return try await queue.withOutcomes(of: runID) { outcomes in
                try await body(queue, DurableHTTPTransport(queue: queue, runID: runID, outcomes: outcomes))
            }
        }
    }

    // The producer used to race the wait against the timeout on the real clock: a job that
    // no worker had taken within 1 ms failed with `TimeoutError`.
    @Test func aRequestThatWaitedLongerThanItsTimeoutForAWorkerIsSentOnceOneComes() async throws {
        let server = DurableHTTPTransportTests.echoServer()
        let text = try await Self.withTransport(clock: ManualClock(), server: server, runID: "late") {
            queue, transport in
            let sent = Task {
                try await transport.send(
                    DurableHTTPTransportTests.request(.get, "/late"), content: nil, progress: nil,
                    timeout: .milliseconds(1))
            }
            // The job waits in the run with no worker; then one comes.
            try await waitUntil("the request's job is in the run") { transport.counts.appended == 1 }
            let stop = DurableStopSignal()
            let worker = Task { try await queue.work(limit: 4, until: stop) }
            let result = await sent.result
            stop.request()
            try await withHangGuard { try await worker.value }
            return String(decoding: try result.get().1, as: UTF8.self)
        }
        #expect(text == "GET /late ")
        #expect(server.requests.count == 1)
    }

    @Test func anAttemptPastItsTimeLimitOnTheWorkerThrowsTimeoutErrorWithTheRequestsTimeout() async throws {
        let clock = ManualClock()
        // A server that never answers: the attempt ends at its time limit, on the queue's clock.
        let server = ScriptedHTTPTransport { _, _ in
            try await AsyncEvent().wait()  // never answers; ends when the time limit cancels it
            return (HTTPResponse(status: .ok), Data())
        }
        let error = try await Self.withTransport(clock: clock, server: server, runID: "slow") { queue, transport in
            let stop = DurableStopSignal()
            let worker = Task { try await queue.work(limit: 4, until: stop) }
            let sent = Task {
                try await transport.send(
                    DurableHTTPTransportTests.request(.get, "/slow"), content: nil, progress: nil, timeout: .seconds(5))
            }
            try await waitUntil("the attempt's time limit is set") {
                clock.pendingSleepers.contains(ManualClock.Instant(offset: .seconds(5)))
            }
            clock.advance(by: .seconds(5))
            let result = await sent.result
            stop.request()
            try await withHangGuard { try await worker.value }
            return result
        }
        switch error {
        case .success: Issue.record("a request whose attempt timed out succeeded")
        case .failure(let error):
            let timeout = try #require(error as? TimeoutError, "\(error)")
            #expect(timeout.timeout == .seconds(5))
        }
    }
}
