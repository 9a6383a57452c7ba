import Foundation
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraDurable

@Suite("Durable runs, on SQLite and on PostgreSQL", .timeLimit(.minutes(1)), .takesTurns)
struct DurableQueueTests {
    /// a → (b, c) → d; each job adds its input to its dependencies' outputs.
    static func diamond() throws -> DurableGraph {
        var graph = DurableGraph()
        try graph.add("a", add, input: [1])
        try graph.add("b", add, input: [10], after: ["a"])
        try graph.add("c", add, input: [100], after: ["a"], options: .init(priority: 5))
        try graph.add("d", add, input: [1000], after: ["b", "c"])
        return graph
    }

    static func registerAdd(on queue: DurableQueue, order: Locked<[String]>? = nil) {
        queue.register(add) { input, context in
            order?.withLock { $0.append(context.jobID) }
            var sum = input.reduce(0, +)
            for dependency in ["a", "b", "c"] where context.jobID != dependency {
                sum += (try? context.output(of: JobHandle<Int>(id: dependency))) ?? 0
            }
            return sum
        }
    }

    @Test(arguments: StoreKind.available) func aGraphRunsInDependencyOrderAndItsOutputsAreStored(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            let order = Locked<[String]>([])
            Self.registerAdd(on: queue, order: order)
            #expect(try await queue.submit(try Self.diamond(), runID: "run-1", limit: 1))
            try await withHangGuard { try await queue.drain() }

            let run = try await queue.run("run-1")
            #expect(run.state == .succeeded && run.ended == epoch)
            // Limit 1: one at a time, the higher priority first among b and c.
            #expect(order.withLock { $0 } == ["a", "c", "b", "d"])
            let jobs = try await queue.jobs(of: "run-1")
            #expect(jobs.map(\.state) == [.succeeded, .succeeded, .succeeded, .succeeded])
            #expect(jobs.map(\.attempts) == [1, 1, 1, 1])
            let outputs = try jobs.map { try $0.output(as: Int.self) }
            #expect(outputs == [1, 11, 101, 1112])  // d reads b and c, its dependencies
        }
    }

    @Test(arguments: StoreKind.available) func submittingTheSameRunAgainStoresNothingAndAnotherGraphUnderItsIdIsRefused(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            #expect(try await queue.submit(try Self.diamond(), runID: "run-1"))
            #expect(try await !queue.submit(try Self.diamond(), runID: "run-1"), "the same graph again: idempotent")
            #expect(try await queue.jobs(of: "run-1").count == 4)

            var other = try Self.diamond()
            try other.add("e", add, input: [5])
            let error = await #expect(throws: DurableError.self) { try await queue.submit(other, runID: "run-1") }
            #expect(error?.code == .runIDInUse)
            #expect(error?.message.contains("'run-1'") == true)
        }
    }

    @Test(arguments: StoreKind.available) func aGraphThatCannotRunIsRefusedBeforeAnythingIsStored(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            var cycle = DurableGraph()
            try cycle.add("a", add, input: [], after: ["c"])
            try cycle.add("b", add, input: [], after: ["a"])
            try cycle.add("c", add, input: [], after: ["b"])
            let error = await #expect(throws: DurableError.self) { try await queue.submit(cycle, runID: "cyclic") }
            #expect(error?.code == .invalidGraph)
            #expect((error?.underlying as? TaskGraphError)?.code == .cycle)
            #expect(error?.message.contains("→") == true, "the cycle's path: \(error?.message ?? "")")

            var unknown = DurableGraph()
            try unknown.add("a", add, input: [], after: ["ghost"])
            let missing = await #expect(throws: DurableError.self) { try await queue.submit(unknown, runID: "x") }
            #expect(missing?.message.contains("ghost") == true)

            var badRetry = DurableGraph()
            try badRetry.add("a", add, input: [], options: .init(retry: DurableRetry(maxAttempts: 0)))
            let retry = await #expect(throws: DurableError.self) { try await queue.submit(badRetry, runID: "y") }
            #expect(retry?.message == "job 'a': retry.maxAttempts must be at least 1, got 0")

            for runID in ["cyclic", "x", "y"] {
                let absent = await #expect(throws: DurableError.self) { try await queue.run(runID) }
                #expect(absent?.code == .unknownRun)
            }
        }
    }

    @Test(arguments: StoreKind.available) func aRetryWaitsForItsStoredTimeEvenAcrossARestart(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let calls = Locked(0)
            let first = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            first.register(add) { _, context in
                calls.withLock { $0 += 1 }
                throw DurableJobFailure("busy (attempt \(context.attempt))")
            }
            var graph = DurableGraph()
            try graph.add(
                "flaky", add, input: [1],
                options: .init(retry: DurableRetry(maxAttempts: 3, initialDelay: .seconds(10))))
            try await first.submit(graph, runID: "retry")
            // The first attempt fails and is recorded; then the worker is stopped.
            let working = Task { try await first.drain() }
            try await withHangGuard {
                // Ready again after one attempt (not ready before any: the job starts ready).
                while try await first.jobs(of: "retry").first.map({ $0.state != .ready || $0.attempts != 1 }) ?? true {
                    await Task.yield()
                }
            }
            working.cancel()
            _ = await working.result

            var job = try #require(try await first.jobs(of: "retry").first)
            #expect(job.state == .ready && job.attempts == 1 && job.error == "busy (attempt 1)")
            #expect(job.runAt == epoch.addingTimeInterval(10))

            // A new process, 4 s later by the wall clock: the retry is still 6 s away.
            let later = ManualClock()
            let second = DurableQueue(
                store: try await file.open(), clock: later, wallClockStart: epoch.addingTimeInterval(4))
            second.register(add) { input, _ in
                calls.withLock { $0 += 1 }
                return input.reduce(0, +)
            }
            let resumed = Task { try await second.drain() }
            // (On a shared store the worker also wakes once as it starts listening for work.)
            try await waitUntil("the worker waits for the retry's time") {
                later.pendingSleepers == [ManualClock.Instant(offset: .seconds(6))]
            }
            #expect(calls.withLock { $0 } == 1, "nothing ran before the retry's time")
            later.advance(by: .seconds(6))
            try await withHangGuard { try await resumed.value }

            job = try #require(try await second.jobs(of: "retry").first)
            #expect(job.state == .succeeded && job.attempts == 2 && calls.withLock { $0 } == 2)
        }
    }

    @Test(arguments: StoreKind.available)
    func aJobWhoseWorkerDiedIsClaimedAgainWhenItsLeaseExpiresAndTheOldAttemptCannotRecord(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            var graph = DurableGraph()
            try graph.add("slow", add, input: [7])
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            try await queue.submit(graph, runID: "lease")

            // A worker claims the job for 60 s, then dies without recording anything.
            let claimed = try await store.claim(
                worker: "dead", kinds: ["add"], limit: 8, now: epoch, leaseExpiry: epoch.addingTimeInterval(60))
            #expect(claimed.map(\.key.jobID) == ["slow"] && claimed.first?.attempt == 1)
            #expect(
                try await store.claim(
                    worker: "other", kinds: ["add"], limit: 8, now: epoch.addingTimeInterval(59),
                    leaseExpiry: epoch.addingTimeInterval(120)
                ).isEmpty, "a live lease keeps the job")

            // Another process starts after the lease expired: the job runs again, attempt 2.
            let restarted = DurableQueue(
                store: try await file.open(), worker: "new", clock: ManualClock(),
                wallClockStart: epoch.addingTimeInterval(61))
            Self.registerAdd(on: restarted)
            try await withHangGuard { try await restarted.drain() }
            let job = try #require(try await restarted.jobs(of: "lease").first)
            #expect(try job.state == .succeeded && job.attempts == 2 && job.output(as: Int.self) == 7)

            // The dead worker's attempt, arriving late, is not recorded over it.
            let late = try await store.record(
                [AttemptOutcome(job: claimed[0], outcome: .succeeded(Data("99".utf8)))], thenClaim: nil,
                now: epoch.addingTimeInterval(62))
            #expect(late.recorded == [RecordedOutcome(recorded: false, runEnded: nil)])
            #expect(try await restarted.jobs(of: "lease").first?.output(as: Int.self) == 7)
        }
    }

    @Test(arguments: StoreKind.available, [FailurePolicy.cancelDependents, .failFast])
    func aFailedJobSkipsItsDependentsOrStopsTheRun(_ kind: StoreKind, _ policy: FailurePolicy) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            queue.register(add) { input, _ in
                if input == [0] { throw DurableJobFailure("refused", retryable: false) }
                return input.reduce(0, +)
            }
            var graph = DurableGraph()
            try graph.add("bad", add, input: [0], options: .init(priority: 9, retry: DurableRetry(maxAttempts: 5)))
            try graph.add("child", add, input: [1], after: ["bad"])
            try graph.add("grandchild", add, input: [2], after: ["child"])
            try graph.add("independent", add, input: [3], after: ["side"])
            try graph.add("side", add, input: [4])
            try await queue.submit(graph, runID: "fails", limit: 1, failurePolicy: policy)
            try await withHangGuard { try await queue.drain() }

            let jobs = Dictionary(uniqueKeysWithValues: try await queue.jobs(of: "fails").map { ($0.id, $0) })
            #expect(jobs["bad"]?.state == .failed && jobs["bad"]?.attempts == 1, "not retryable: one attempt")
            #expect(jobs["bad"]?.error == "refused")
            #expect(try await queue.run("fails").state == .failed)
            switch policy {
            case .cancelDependents:
                #expect(jobs["child"]?.state == .skipped && jobs["grandchild"]?.state == .skipped)
                #expect(jobs["grandchild"]?.error == "not run: job 'bad' failed")
                #expect(jobs["side"]?.state == .succeeded && jobs["independent"]?.state == .succeeded)
            case .failFast:
                #expect(jobs.values.filter { $0.id != "bad" }.allSatisfy { $0.state == .cancelled })
                #expect(jobs["side"]?.error == "the run stopped: job 'bad' failed")
            }
        }
    }

    @Test(arguments: StoreKind.available) func anAttemptPastItsTimeLimitFailsAndIsRetried(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let queue = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            queue.register(wait) { input, context in
                if context.attempt == 1 {
                    await untilCancelled()
                    throw CancellationError()
                }
                return input + " after \(context.attempt) attempts, key \(context.idempotencyKey)"
            }
            var graph = DurableGraph()
            try graph.add(
                "w", wait, input: "done",
                options: .init(timeout: .seconds(5), retry: DurableRetry(maxAttempts: 2, initialDelay: .seconds(1))))
            try await queue.submit(graph, runID: "timed")
            let working = Task { try await queue.drain() }
            // The attempt's time limit, then the retry's backoff (the leases' renewal sleeps
            // too, until t+100: wait for these deadlines, not for any sleeper).
            try await waitUntil("the time limit") { clock.pendingSleepers.contains(.init(offset: .seconds(5))) }
            clock.advance(by: .seconds(5))
            try await waitUntil("the backoff") { clock.pendingSleepers.contains(.init(offset: .seconds(6))) }
            clock.advance(by: .seconds(1))
            try await withHangGuard { try await working.value }
            let job = try #require(try await queue.jobs(of: "timed").first)
            #expect(job.state == .succeeded && job.attempts == 2)
            #expect(try await queue.run("timed").state == .succeeded)
            #expect(try job.output(as: String.self) == "done after 2 attempts, key timed/w/2")
        }
    }

    // A store of its own only: on a shared store another worker may have the handler.
    @Test(arguments: [StoreKind.sqlite]) func aJobOfAKindWithNoHandlerIsNamedNotRun(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            Self.registerAdd(on: queue)
            var graph = DurableGraph()
            try graph.add("sum", add, input: [1])
            try graph.add("mail", JobKind<String, String>("send-mail"), input: "hi", after: ["sum"])
            try await queue.submit(graph, runID: "kinds")
            let error = await #expect(throws: DurableError.self) { try await withHangGuard { try await queue.drain() } }
            #expect(error?.code == .unknownJobKind)
            #expect(
                error?.message
                    == "job 'mail' of run 'kinds' is of kind 'send-mail', which has no handler on this queue (registered: add)"
            )
            #expect(try await queue.jobs(of: "kinds").map(\.state) == [.succeeded, .ready])
        }
    }

    @Test(arguments: StoreKind.available) func aCancelledRunRunsNothingMore(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            Self.registerAdd(on: queue)
            try await queue.submit(try Self.diamond(), runID: "stop")
            #expect(try await queue.cancel(runID: "stop"))
            #expect(try await !queue.cancel(runID: "stop"), "already ended")
            try await withHangGuard { try await queue.drain() }
            #expect(try await queue.run("stop").state == .cancelled)
            #expect(try await queue.jobs(of: "stop").allSatisfy { $0.state == .cancelled && $0.attempts == 0 })
            let unknown = await #expect(throws: DurableError.self) { try await queue.cancel(runID: "nope") }
            #expect(unknown?.code == .unknownRun)
        }
    }

    @Test(arguments: StoreKind.available) func anOutputReadAsAnotherTypeOrFromANonDependencyIsANamedError(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            let misread = Locked<DurableError?>(nil)
            queue.register(add) { input, context in
                do throws(DurableError) {
                    _ = try context.output(of: JobHandle<Int>(id: "first"))
                } catch {
                    misread.withLock { $0 = error }
                }
                return input.reduce(0, +)
            }
            var graph = DurableGraph()
            try graph.add("first", add, input: [2])
            try graph.add("second", add, input: [3])
            try await queue.submit(graph, runID: "types", limit: 1)
            try await withHangGuard { try await queue.drain() }
            let record = try #require(try await queue.jobs(of: "types").first)
            let error = #expect(throws: DurableError.self) { try record.output(as: String.self) }
            #expect(error?.code == .typeMismatch)
            #expect(error?.message.hasPrefix("the output of job 'first' is not a String") == true)
            let fromContext = misread.withLock { $0 }
            #expect(fromContext?.code == .typeMismatch)
            #expect(fromContext?.message == "job 'second' does not depend on 'first': its output is not here")
        }
    }

    @Test(arguments: StoreKind.available) func aJobLongerThanItsLeaseKeepsItBecauseTheWorkerRenewsIt(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let store = try await file.open()
            let queue = DurableQueue(store: store, leaseDuration: .seconds(60), clock: clock, wallClockStart: epoch)
            let gate = AsyncGate(isOpen: false)
            queue.register(add) { input, _ in
                try await gate.pass()
                return input.reduce(0, +)
            }
            var graph = DurableGraph()
            try graph.add("long", add, input: [5])
            try await queue.submit(graph, runID: "renewed")
            let working = Task { try await queue.drain() }
            // The renewal sleeps a third of a lease while the job is held, renews, and sleeps again.
            // On PostgreSQL the worker also wakes once as its LISTEN starts (its sleep cancelled,
            // a claim, then the same sleep again): wait for the renewal's deadline, not for any
            // sleeper, which that wake-up may have removed by the time it is looked at.
            try await waitUntil("the renewal sleeps") {
                clock.pendingSleepers == [ManualClock.Instant(offset: .seconds(20))]
            }
            clock.advance(by: .seconds(20))
            try await waitUntil("the renewal sleeps again") {
                clock.pendingSleepers == [ManualClock.Instant(offset: .seconds(40))]
            }
            // At t+70 the first lease (to t+60) would have expired; the renewed one (t+80) holds.
            let taken = try await store.claim(
                worker: "other", kinds: ["add"], limit: 8, now: epoch.addingTimeInterval(70),
                leaseExpiry: epoch.addingTimeInterval(130))
            #expect(taken.isEmpty, "the job was taken from a live worker")
            gate.open()
            try await withHangGuard { try await working.value }
            let job = try #require(try await queue.jobs(of: "renewed").first)
            #expect(job.state == .succeeded && job.attempts == 1)
            #expect(clock.pendingSleepers.isEmpty, "no renewal left sleeping")
        }
    }

    @Test(arguments: StoreKind.available) func finishedRunsOlderThanTheRetentionAreRemovedWithTheirJobs(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let queue = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            Self.registerAdd(on: queue)
            try await queue.submit(try Self.diamond(), runID: "old")
            try await queue.drain()
            clock.advance(by: .seconds(5_400))
            try await queue.submit(try Self.diamond(), runID: "recent")
            try await queue.drain()
            var unfinished = DurableGraph()
            try unfinished.add("x", JobKind<String, String>("not-registered"), input: "")
            try await queue.submit(unfinished, runID: "open")

            // Two hours after the first run ended: only it is older than an hour.
            clock.advance(by: .seconds(1_800))
            #expect(try await queue.removeFinishedRuns(olderThan: .seconds(3_600)) == 1)
            let gone = await #expect(throws: DurableError.self) { try await queue.run("old") }
            #expect(gone?.code == .unknownRun)
            #expect(try await queue.jobs(of: "old").isEmpty)
            #expect(try await queue.run("recent").state == .succeeded)
            #expect(try await queue.run("open").state == .running)
            #expect(try await queue.removeFinishedRuns(olderThan: .zero) == 1, "then the recent one")
            #expect(try await queue.run("open").state == .running, "a run still going is never removed")
        }
    }

    @Test(arguments: StoreKind.available) func eventsReportEveryAttemptAndOutcomeAndTheRunsEndAndResultWaitsForIt(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let queue = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            queue.register(add) { input, context in
                if input == [2] && context.attempt == 1 { throw DurableJobFailure("not yet") }
                return input.reduce(0, +)
            }
            var graph = DurableGraph()
            let first = try graph.add("first", add, input: [1])
            try graph.add(
                "second", add, input: [2], after: [first.id],
                options: .init(retry: DurableRetry(maxAttempts: 2, initialDelay: .seconds(3))))
            try await queue.submit(graph, runID: "observed", limit: 1)

            let events = queue.events()
            let result = Task { try await queue.result(of: "observed") }
            let working = Task { try await queue.drain() }
            // The retry of `second` at t+3 (the renewal of the leases may sleep too, until t+100,
            // and the wait for the result looks again every second).
            try await waitUntil("the retry waits") {
                clock.pendingSleepers.contains(ManualClock.Instant(offset: .seconds(3)))
            }
            clock.advance(by: .seconds(3))
            try await withHangGuard { try await working.value }
            let run = try await withHangGuard { try await result.value }
            #expect(run.state == .succeeded && run.ended == epoch.addingTimeInterval(3))

            var seen: [DurableEvent] = []
            for await event in events {
                seen.append(event)
                if case .runEnded = event { break }
            }
            let (a, b) = (JobKey(runID: "observed", jobID: "first"), JobKey(runID: "observed", jobID: "second"))
            #expect(
                seen == [
                    .started(a, attempt: 1), .succeeded(a, attempt: 1),
                    .started(b, attempt: 1),
                    .failed(b, attempt: 1, error: "not yet", retryAt: epoch.addingTimeInterval(3)),
                    .started(b, attempt: 2), .succeeded(b, attempt: 2),
                    .runEnded(runID: "observed", state: .succeeded),
                ])
            // A run that has ended: at once.
            #expect(try await queue.result(of: "observed").state == .succeeded)
        }
    }

    @Test(arguments: StoreKind.available) func aRunCancelledThroughTheQueueEndsTheWaitForItsResult(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            try await queue.submit(try Self.diamond(), runID: "waited")
            let events = queue.events()
            let result = Task { try await queue.result(of: "waited") }
            // The waiter has subscribed once it has read the run; cancelling then ends its wait.
            try await queue.cancel(runID: "waited")
            #expect(try await withHangGuard { try await result.value }.state == .cancelled)
            for await event in events {
                #expect(event == .runEnded(runID: "waited", state: .cancelled))
                break
            }
            let unknown = await #expect(throws: DurableError.self) { try await queue.result(of: "nope") }
            #expect(unknown?.code == .unknownRun)
        }
    }

    /// A run worked on by another queue on the same store (another process, as far as the
    /// waiting queue knows): its end reaches the wait through the store, not this queue's events.
    @Test(arguments: StoreKind.available) func aRunWorkedOnElsewhereEndsTheWaitForItsResult(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let clock = ManualClock()
            let waiter = DurableQueue(store: try await file.open(), clock: clock, wallClockStart: epoch)
            let worker = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            Self.registerAdd(on: worker)
            try await waiter.submit(try Self.diamond(), runID: "elsewhere")
            let returned = Locked(false)
            let result = Task {
                defer { returned.withLock { $0 = true } }
                return try await waiter.result(of: "elsewhere")
            }
            try await withHangGuard { try await worker.drain() }
            // Told by the store (PostgreSQL's notification), or asleep until its next look.
            try await waitUntil("the waiter returned, or sleeps until it looks again") {
                returned.withLock { $0 } || !clock.pendingSleepers.isEmpty
            }
            clock.advance(by: DurableQueue.resultPollInterval)
            let run = try await withHangGuard { try await result.value }
            #expect(run.state == .succeeded)
        }
    }

    @Test(arguments: StoreKind.available) func amongReadyJobsTheLongestRemainingPathRunsFirstAsInATaskGraph(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            let order = Locked<[String]>([])
            Self.registerAdd(on: queue, order: order)
            var graph = DurableGraph()
            try graph.add("short", add, input: [1])
            try graph.add("head", add, input: [2])
            try graph.add("tail", add, input: [3], after: ["head"], options: .init(cost: 10))
            try graph.add("urgent", add, input: [4], options: .init(priority: 1))
            try await queue.submit(graph, runID: "paths", limit: 1)
            try await withHangGuard { try await queue.drain() }
            // Priority first; then head (1 + 10 ahead of it) before short (1); then tail (10).
            #expect(order.withLock { $0 } == ["urgent", "head", "tail", "short"])

            var negative = DurableGraph()
            try negative.add("x", add, input: [], options: .init(cost: -1))
            let error = await #expect(throws: DurableError.self) { try await queue.submit(negative, runID: "bad") }
            #expect(error?.code == .invalidGraph)
            #expect(
                error?.message == "the graph cannot run: node \"x\" has cost -1.0; a cost must be finite and 0 or more")
        }
    }

    @Test(arguments: StoreKind.available) func aResourceLimitsItsJobsAndAJobWaitingForItHoldsNoOtherBack(
        _ kind: StoreKind
    ) async throws {
        try await withTemporaryStore(kind) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            let gate = AsyncGate(isOpen: false)
            let running = Locked((now: 0, peakOnAPI: 0, names: [String]()))
            queue.register(add) { input, context in
                running.withLock { $0.names.append(context.jobID) }
                if input.first == 1 {
                    running.withLock {
                        $0.now += 1
                        $0.peakOnAPI = max($0.peakOnAPI, $0.now)
                    }
                    try await gate.pass()
                    running.withLock { $0.now -= 1 }
                }
                return input.reduce(0, +)
            }
            var graph = DurableGraph()
            for index in 0..<4 {
                try graph.add("api-\(index)", add, input: [1], options: .init(priority: 1, resources: ["api"]))
            }
            try graph.add("local", add, input: [2])
            try await queue.submit(graph, runID: "resources", limit: 4, resourceLimits: ["api": 2])
            let working = Task { try await queue.drain(limit: 4) }
            // Two api jobs hold the resource; the local job runs beside them, though the two
            // other api jobs come first by priority.
            try await waitUntil("two api jobs and the local one started") {
                running.withLock { $0.names.count == 3 && $0.names.contains("local") }
            }
            gate.open()
            try await withHangGuard { try await working.value }
            #expect(running.withLock { $0.peakOnAPI } == 2)
            #expect(try await queue.jobs(of: "resources").allSatisfy { $0.state == .succeeded })

            var unknown = DurableGraph()
            try unknown.add("x", add, input: [], options: .init(resources: ["db"]))
            let error = await #expect(throws: DurableError.self) {
                try await queue.submit(unknown, runID: "no-limit", resourceLimits: ["api": 1])
            }
            #expect(
                error?.message
                    == "job 'x' uses the resource 'db', which has no limit in resourceLimits nor rate in resourceRates")
            let zero = await #expect(throws: DurableError.self) {
                try await queue.submit(graph, runID: "zero", resourceLimits: ["api": 0])
            }
            #expect(zero?.message == "resource 'api': its limit must be at least 1, got 0")
        }
    }
}
