import DurableStoreTestSupport
import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraDurable

@Suite("Open runs: jobs appended as they come, and their outcomes awaited", .timeLimit(.minutes(1)), .takesTurns)
struct OpenRunTests {
    /// One job of `add` with `input`, using `resources`.
    static func job(_ id: String, _ input: [Int], resources: [String] = []) throws -> DurableGraph {
        var graph = DurableGraph()
        try graph.add(id, add, input: input, options: .init(resources: resources))
        return graph
    }

    /// A run opened by one version of its producer is opened again only by that version:
    /// another (an edited workflow file) is refused, in every store, rather than mixing its
    /// jobs with the run's.
    @Test(arguments: StoreKind.available) func anOpenRunIsOpenedAgainOnlyByTheSameVersion(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            #expect(try await queue.open(runID: "versioned", limit: 4, version: "digest-a"))
            #expect(!(try await queue.open(runID: "versioned", limit: 4, version: "digest-a")))
            for other in ["digest-b", nil] {
                let error = await #expect(throws: DurableError.self, "version \(other ?? "none")") {
                    try await queue.open(runID: "versioned", limit: 4, version: other)
                }
                #expect(error?.code == .runIDInUse)
            }
            // A run opened with no version keeps taking none (runs stored before versions).
            #expect(try await queue.open(runID: "unversioned", limit: 4))
            #expect(!(try await queue.open(runID: "unversioned", limit: 4)))
            await #expect(throws: DurableError.self) {
                try await queue.open(runID: "unversioned", limit: 4, version: "digest-a")
            }
        }
    }

    @Test(arguments: StoreKind.available) func jobsAppendedToAnOpenRunRunAndTheRunEndsOnlyOnceClosed(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            // On a shared store the coordinator and the worker are two queues on two connections
            // (as two processes); on SQLite, one queue.
            let coordinator = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            let worker =
                kind == .postgres
                ? DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch) : coordinator
            worker.register(add) { input, _ in
                if input.contains(-1) { throw DurableJobFailure("negative", retryable: false) }
                return input.reduce(0, +)
            }
            #expect(try await coordinator.open(runID: "open", limit: 4, resourceLimits: ["host": 1]))
            #expect(!(try await coordinator.open(runID: "open", limit: 4, resourceLimits: ["host": 1])))
            await #expect(throws: DurableError.self) {
                try await coordinator.open(runID: "open", limit: 5)
            }
            let stop = DurableStopSignal()
            let working = Task { try await worker.work(limit: 4, until: stop) }
            try await coordinator.withOutcomes(of: "open") { outcomes in
                // One job at a time, each appended after the outcome of the one before.
                var total = 0
                for step in 1...3 {
                    try await coordinator.append(
                        try Self.job("step-\(step)", [total, step], resources: ["host"]), to: "open")
                    let record = try await outcomes.wait(for: "step-\(step)")
                    #expect(record.state == .succeeded)
                    total = try record.output(as: Int.self)
                }
                #expect(total == 6)
                // All its jobs have ended; the run has not.
                #expect(try await coordinator.run("open").state == .running)

                // Appended again (a coordinator that restarted): nothing added, the outcome kept.
                #expect(
                    try await coordinator.append(try Self.job("step-1", [0, 1], resources: ["host"]), to: "open") == 0)
                let again = await #expect(throws: DurableError.self) {
                    try await coordinator.append(try Self.job("step-1", [5, 5]), to: "open")
                }
                #expect(again?.code == .runIDInUse && again?.message.contains("'step-1'") == true)
                let resource = await #expect(throws: DurableError.self) {
                    try await coordinator.append(try Self.job("other", [1], resources: ["elsewhere"]), to: "open")
                }
                #expect(resource?.code == .invalidGraph && resource?.message.contains("'elsewhere'") == true)
                let unknown = await #expect(throws: DurableError.self) { try await outcomes.wait(for: "never-added") }
                #expect(unknown?.code == .unknownJob)

                // A failed job is an outcome too.
                try await coordinator.append(try Self.job("fails", [-1]), to: "open")
                let failed = try await outcomes.wait(for: "fails")
                #expect(failed.state == .failed && failed.error == "negative")
            }
            #expect(try await coordinator.close(runID: "open") == .failed)
            let closed = await #expect(throws: DurableError.self) {
                try await coordinator.append(try Self.job("late", [1]), to: "open")
            }
            #expect(closed?.code == .runClosed)
            let run = try await coordinator.run("open")
            #expect(run.state == .failed && run.ended != nil)
            #expect(try await coordinator.jobs(of: "open").map(\.id) == ["step-1", "step-2", "step-3", "fails"])
            stop.request()
            try await withHangGuard { try await working.value }
        }
    }

    @Test(arguments: StoreKind.available) func drainWaitsForTheJobsOfAnOpenRunAndReturnsOnceItIsClosed(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open())
            queue.register(add) { input, _ in input.reduce(0, +) }
            try await queue.open(runID: "fed")
            let draining = Task { try await queue.drain() }
            try await queue.withOutcomes(of: "fed") { outcomes in
                try await queue.append(try Self.job("a", [1, 2]), to: "fed")
                #expect(try await outcomes.wait(for: "a").output(as: Int.self) == 3)
            }
            // Closed with every job done: the run ends now, and so does the drain.
            #expect(try await queue.close(runID: "fed") == .succeeded)
            try await withHangGuard { try await draining.value }
            #expect(try await queue.run("fed").state == .succeeded)
        }
    }

    @Test(arguments: StoreKind.available) func aWaitForAnOutcomeEndsWhenItsTaskIsCancelled(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open())
            try await queue.open(runID: "waiting")
            try await queue.append(try Self.job("never-run", [1]), to: "waiting")
            try await queue.withOutcomes(of: "waiting") { outcomes in
                let waiting = Task { try await outcomes.wait(for: "never-run") }
                try await waitUntil("the job is waited for") { outcomes.awaited == ["never-run"] }
                waiting.cancel()
                await #expect(throws: CancellationError.self) { try await withHangGuard { try await waiting.value } }
                #expect(outcomes.awaited.isEmpty)
            }
        }
    }
}

/// A store that keeps the ids of each look for outcomes (`jobs(of:ids:)`), in order.
final class RecordingLooks: ForwardingJobStore {
    let base: any JobStore
    let looks = Locked<[[String]]>([])

    init(_ base: any JobStore) {
        self.base = base
    }

    func jobs(of runID: String, ids: [String]) async throws -> [DurableJobRecord] {
        looks.withLock { $0.append(ids.sorted()) }
        return try await base.jobs(of: runID, ids: ids)
    }
}

@Suite("Outcomes awaited: what each change makes a waiter look at", .timeLimit(.minutes(1)), .takesTurns)
struct OutcomeLookTests {
    /// Runs `body` with a coordinator whose store records its looks, and a worker (on
    /// PostgreSQL another queue on its own connection, as another process; on SQLite the same
    /// queue) running `handler`, inside `withOutcomes` of the open run `runID`, once the
    /// coordinator listens for outcomes (on PostgreSQL, the start of listening is a change that
    /// names nothing: anything recorded before is looked for then).
    static func withCoordinator(
        _ kind: StoreKind, runID: String,
        handler: @escaping @Sendable ([Int], JobContext) async throws -> Int = { input, _ in input.reduce(0, +) },
        _ body: (RecordingLooks, DurableQueue, DurableQueue, DurableOutcomes) async throws -> Void
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let store = RecordingLooks(try await file.open())
            let coordinator = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            let worker =
                kind == .postgres
                ? DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch) : coordinator
            worker.register(add, handler: handler)
            try await coordinator.open(runID: runID, limit: 4)
            try await coordinator.withOutcomes(of: runID) { outcomes in
                if kind == .postgres {
                    try await waitUntil("the outcome notifications are listened to") {
                        outcomes.changes.read { $0 } >= 1
                    }
                }
                try await body(store, coordinator, worker, outcomes)
            }
        }
    }

    /// Runs `body` while `worker` works, then stops it.
    static func working(_ worker: DurableQueue, _ body: () async throws -> Void) async throws {
        let stop = DurableStopSignal()
        let working = Task<Void, any Error>.detached { try await worker.work(limit: 4, until: stop) }
        do {
            try await body()
        } catch {
            stop.request()
            throw error
        }
        stop.request()
        try await withHangGuard { try await working.value }
    }

    /// A job's outcome is read when it is first waited for and when a change names it, not at
    /// every outcome of the run while it waits: on PostgreSQL the notification names the jobs
    /// that succeeded, in this process the queue's event does. (Before, every change read every
    /// job waited for: about eight reads of each in a run of 10,000.)
    @Test(arguments: StoreKind.available) func aChangeThatNamesItsJobsIsLookedAtForThoseAlone(
        _ kind: StoreKind
    ) async throws {
        let (released, release) = AsyncStream<Void>.makeStream()
        let handler: @Sendable ([Int], JobContext) async throws -> Int = { input, _ in
            if input == [0] { for await _ in released { break } }
            return input.reduce(0, +)
        }
        try await Self.withCoordinator(kind, runID: "named", handler: handler) { store, coordinator, worker, outcomes in
            try await coordinator.append(try OpenRunTests.job("slow", [0]), to: "named")
            try await coordinator.append(try OpenRunTests.job("fast", [1]), to: "named")
            let slow = Task { try await outcomes.wait(for: "slow") }
            let fast = Task { try await outcomes.wait(for: "fast") }
            // Both looked at once, as they began to be waited for (neither has run).
            try await waitUntil("both jobs are looked at") {
                Set(store.looks.withLock { $0.joined() }) == ["slow", "fast"]
            }
            let before = store.looks.withLock { $0.count }
            try await Self.working(worker) {
                let fastRecord = try await withHangGuard { try await fast.value }
                #expect(try fastRecord.output(as: Int.self) == 1)
                // The change that ended "fast" named it alone: "slow", still running, not read.
                let afterFast = store.looks.withLock { Array($0[before...]) }
                #expect(afterFast == [["fast"]])
                release.yield()
                let slowRecord = try await withHangGuard { try await slow.value }
                #expect(try slowRecord.output(as: Int.self) == 0)
                #expect(store.looks.withLock { Array($0[(before + afterFast.count)...]) } == [["slow"]])
            }
        }
    }

    /// A job the caller has just added (``DurableOutcomes/wait(for:appendingWith:)``) cannot
    /// have ended: it is read once, when a change names it. One the run had already (a
    /// coordinator started again) is read at once.
    @Test(arguments: StoreKind.available) func aJobJustAddedIsReadOnceWhenNamedAndOneFoundIsReadAtOnce(
        _ kind: StoreKind
    ) async throws {
        try await Self.withCoordinator(kind, runID: "fresh") { store, coordinator, worker, outcomes in
            try await Self.working(worker) {
                let job = try OpenRunTests.job("new", [2, 3])
                let record = try await withHangGuard {
                    try await outcomes.wait(for: "new") { try await coordinator.append(job, to: "fresh") == 1 }
                }
                #expect(try record.output(as: Int.self) == 5)
                #expect(store.looks.withLock { $0 } == [["new"]])
                // Appended again: the run has it, ended; read at once (no change will name it).
                let again = try await withHangGuard {
                    try await outcomes.wait(for: "new") { try await coordinator.append(job, to: "fresh") == 1 }
                }
                #expect(again.state == .succeeded)
                #expect(store.looks.withLock { $0 } == [["new"], ["new"]])
            }
        }
    }

    /// A change that names a job while it is being appended, before its waiter is in place, is
    /// kept for that waiter: here the job runs and ends, and its change is taken note of, before
    /// the append returns.
    @Test(arguments: StoreKind.available) func aJobThatEndsBeforeItsWaiterIsInPlaceIsStillSeen(
        _ kind: StoreKind
    ) async throws {
        try await Self.withCoordinator(kind, runID: "early") { _, coordinator, worker, outcomes in
            try await Self.working(worker) {
                let record = try await withHangGuard {
                    try await outcomes.wait(for: "quick") {
                        let seen = outcomes.changes.read { $0 }
                        let added = try await coordinator.append(try OpenRunTests.job("quick", [7]), to: "early")
                        try await waitUntil("the job ended and its change was noted") {
                            outcomes.changes.read { $0 } > seen
                        }
                        #expect(try await coordinator.jobs(of: "early").map(\.state) == [.succeeded])
                        return added == 1
                    }
                }
                #expect(try record.output(as: Int.self) == 7)
            }
        }
    }

    /// A failure for good skips its dependents, which no outcome names: the change is told as
    /// one that may have ended any job, and a waiter for a dependent (here on PostgreSQL with
    /// no poll to fall back on) learns of its end.
    @Test(arguments: StoreKind.available) func aDependentSkippedByAFailureIsSeenThoughNoChangeNamesIt(
        _ kind: StoreKind
    ) async throws {
        let handler: @Sendable ([Int], JobContext) async throws -> Int = { input, _ in
            if input.contains(-1) { throw DurableJobFailure("negative", retryable: false) }
            return input.reduce(0, +)
        }
        try await Self.withCoordinator(kind, runID: "skipping", handler: handler) { _, coordinator, worker, outcomes in
            var graph = DurableGraph()
            let first = try graph.add("fails", add, input: [-1])
            try graph.add("after", add, input: [1], after: [first.id])
            try await coordinator.append(graph, to: "skipping")
            let after = Task { try await outcomes.wait(for: "after") }
            try await waitUntil("the dependent is waited for") { outcomes.awaited == ["after"] }
            try await Self.working(worker) {
                let record = try await withHangGuard { try await after.value }
                #expect(record.state == .skipped && record.error?.contains("'fails'") == true)
            }
        }
    }
}

/// A store that runs `beforeLook` once, the first time a worker asks what lies ahead: a close
/// committed by another process while the worker found nothing to claim.
final class ClosingBeforeLook: ForwardingJobStore {
    let base: any JobStore
    let beforeLook: Locked<(@Sendable () async throws -> Void)?>

    init(_ base: any JobStore, beforeLook: @escaping @Sendable () async throws -> Void) {
        self.base = base
        self.beforeLook = Locked(beforeLook)
    }

    func outlook(after now: Date, kinds: Set<String>) async throws -> WorkOutlook {
        if let action = beforeLook.withLock({ action in
            defer { action = nil }
            return action
        }) {
            try await action()
        }
        return try await base.outlook(after: now, kinds: kinds)
    }
}

@Suite("An open run closed while a worker looks", .timeLimit(.minutes(1)), .takesTurns)
struct OpenRunCloseRaceTests {
    @Test func aRunClosedBetweenTheWorkersLooksEndsTheDrainInsteadOfLookingStuck() async throws {
        try await withTemporaryStore { file in
            let base = try await file.open()
            // The run is open, with no job: the worker finds nothing to claim, then asks what lies
            // ahead just after another process closed (and so ended) it.
            let closer = DurableQueue(store: base)
            try await closer.open(runID: "closing")
            let store = ClosingBeforeLook(base) { _ = try await base.close(runID: "closing", now: Date()) }
            let queue = DurableQueue(store: store)
            queue.register(add) { input, _ in input.reduce(0, +) }
            try await withHangGuard { try await queue.drain() }
            #expect(try await queue.run("closing").state == .succeeded)
        }
    }
}
