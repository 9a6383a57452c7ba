import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraDurable

@Suite("A long-lived worker, and its graceful stop", .timeLimit(.minutes(1)), .takesTurns)
struct GracefulStopTests {
    /// `count` independent jobs of `wait`, each returning its input.
    static func independent(_ count: Int) throws -> DurableGraph {
        var graph = DurableGraph()
        for index in 1...count { try graph.add("job-\(index)", wait, input: "out-\(index)") }
        return graph
    }

    @Test(arguments: StoreKind.available) func aStoppedWorkerFinishesItsRunningJobsWithinTheGracePeriodAndClaimsNoMore(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let queue = DurableQueue(
                store: try await file.open(), leaseDuration: .seconds(60), clock: clock, wallClockStart: epoch)
            let gate = AsyncGate(isOpen: false)
            let started = Locked([String]())
            queue.register(wait) { input, context in
                started.withLock { $0.append(context.jobID) }
                try await gate.pass()
                return input
            }
            try await queue.submit(try Self.independent(3), runID: "stopped", limit: 8)
            let stop = DurableStopSignal()
            let working = Task { try await queue.work(limit: 1, until: stop, gracePeriod: .seconds(10)) }
            try await waitUntil("one job runs") { started.withLock { $0.count } == 1 }
            stop.request()
            // The grace period's timer, beside the renewal's (a third of the lease).
            try await waitUntil("the grace period is timed") {
                clock.pendingSleepers.contains(ManualClock.Instant(offset: .seconds(10)))
            }
            gate.open()
            try await withHangGuard { try await working.value }

            let jobs = try await queue.jobs(of: "stopped")
            #expect(jobs.map(\.state) == [.succeeded, .ready, .ready])
            #expect(jobs.map(\.attempts) == [1, 0, 0], "a job was claimed after the stop")
            #expect(started.withLock { $0 } == ["job-1"])
            #expect(clock.pendingSleepers.isEmpty, "a timer was left sleeping")
        }
    }

    @Test(arguments: StoreKind.available) func aJobStillRunningWhenTheGracePeriodEndsIsGivenBackForAnotherWorkerAtOnce(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let store = try await file.open()
            let queue = DurableQueue(
                store: store, worker: "leaving", leaseDuration: .seconds(60), clock: clock, wallClockStart: epoch)
            let cancelled = Locked(false)
            queue.register(wait) { input, _ in
                await untilCancelled()
                cancelled.withLock { $0 = true }
                throw CancellationError()
            }
            try await queue.submit(try Self.independent(1), runID: "given-back")
            let stop = DurableStopSignal()
            let working = Task { try await queue.work(limit: 4, until: stop, gracePeriod: .seconds(10)) }
            try await waitUntil("the job's lease is renewed") {
                clock.pendingSleepers == [ManualClock.Instant(offset: .seconds(20))]
            }
            stop.request()
            try await waitUntil("the grace period is timed") {
                clock.pendingSleepers.contains(ManualClock.Instant(offset: .seconds(10)))
            }
            clock.advance(by: .seconds(10))
            try await withHangGuard { try await working.value }
            #expect(cancelled.withLock { $0 }, "the handler was not cancelled")

            // Its lease ran to t+60; given back, another worker takes the job at t+10.
            let taken = try await store.claim(
                worker: "other", kinds: ["wait"], limit: 8, now: epoch.addingTimeInterval(10),
                leaseExpiry: epoch.addingTimeInterval(70))
            #expect(taken.map(\.key.jobID) == ["job-1"])
            #expect(taken.first?.attempt == 2, "the given-back attempt still counts")
        }
    }

    @Test(arguments: StoreKind.available) func aLongLivedWorkerWaitsForNewRunsUntilStopped(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let queue = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            queue.register(wait) { input, _ in input }
            let events = queue.events()
            let stop = DurableStopSignal()
            let working = Task { try await queue.work(limit: 2, until: stop) }
            // A run submitted while the worker waits wakes it: through this queue on a store of
            // its own, through the store's notification (another process) on a shared one.
            let submitter =
                kind == .postgres
                ? DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch) : queue
            for run in ["first", "second"] {
                try await submitter.submit(try Self.independent(2), runID: run)
                for await event in events {
                    if case .runEnded(run, let state) = event {
                        #expect(state == .succeeded)
                        break
                    }
                }
            }
            #expect(
                try await queue.jobs(of: "second").compactMap(\.output) == [
                    Data("\"out-1\"".utf8), Data("\"out-2\"".utf8),
                ])
            stop.request()
            try await withHangGuard { try await working.value }
        }
    }

    @Test func aStopRequestedBeforeTheWorkerStartsStopsItAtOnce() async throws {
        try await withTemporaryStore { file in
            let queue = DurableQueue(store: try await file.open())
            let started = Locked(0)
            queue.register(wait) { input, _ in
                started.withLock { $0 += 1 }
                return input
            }
            try await queue.submit(try Self.independent(2), runID: "never")
            let stop = DurableStopSignal()
            stop.request()
            try await withHangGuard { try await queue.work(until: stop) }
            #expect(started.withLock { $0 } == 0)
            #expect(try await queue.jobs(of: "never").map(\.state) == [.ready, .ready])
        }
    }
}
