import Foundation
import GRDB
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraDurable
@testable import OrchestraPostgres

/// Rates of a run's resources (``DurableRate``) and pauses, enforced in the claim: the rule in
/// ``ClaimPlanner`` alone, then on every store with the claims' times injected.
@Suite("Resource rates: the rule and the stores' claims", .timeLimit(.minutes(1)), .takesTurns)
struct ResourceRateTests {
    typealias Resource = ClaimPlanner.Resource
    typealias Pace = ClaimPlanner.Pace

    /// Nanoseconds of `seconds` after `epoch`.
    static func at(_ seconds: Double) -> Int64 { Nanos.of(epoch.addingTimeInterval(seconds)) }

    static func job(_ name: String, position: Int, resources: [String] = []) -> ClaimPlanner.Candidate {
        let parts = name.split(separator: "/").map(String.init)
        return ClaimPlanner.Candidate(
            key: JobKey(runID: parts[0], jobID: parts[1]), kind: "k", priority: 0, criticalPath: 1, due: 0,
            position: position, resources: resources)
    }

    /// 10/s with a burst of 2: 100 ms apart once two went at once.
    static let tenPerSecond = DurableRate(.perSecond(10), burst: 2)

    // MARK: - The rule (ClaimPlanner)

    /// The instants at which a claimer asking for `api` jobs at each of `times` gets them, under
    /// the planner alone: what both stores must grant too.
    static func plannedCounts(_ rate: DurableRate, at times: [Double]) -> [Int] {
        var pace = Pace(rate, tat: 0, pausedUntil: 0)
        var counts: [Int] = []
        for time in times {
            let candidates = (0..<10).map { job("a/\($0)", position: $0, resources: ["api"]) }
            var planner = ClaimPlanner(
                limit: 10, kinds: ["k"], now: Millis.of(epoch.addingTimeInterval(time)),
                runs: ["a": .init(limit: 100, inUse: 0)], resources: [:],
                paces: [Resource(runID: "a", name: "api"): pace], instant: at(time))
            counts.append(planner.take(candidates).count)
            pace = planner.paces[Resource(runID: "a", name: "api")]!
        }
        return counts
    }

    /// The claims' times and how many jobs of a 10/s, burst 2 resource each takes: two at once,
    /// then one every 100 ms; a quiet spell lets two go again, never more.
    static let schedule: [(time: Double, claimed: Int)] = [
        (0, 2), (0.05, 0), (0.099, 0), (0.1, 1), (0.15, 0), (0.2, 1), (0.5, 2), (0.55, 0), (0.6, 1), (3, 2),
    ]

    @Test func theRuleGrantsTheGCRAInstants() {
        #expect(Self.plannedCounts(Self.tenPerSecond, at: Self.schedule.map(\.time)) == Self.schedule.map(\.claimed))
        // Burst 1: evenly spaced, one a claim.
        #expect(
            Self.plannedCounts(DurableRate(.perSecond(10)), at: [0, 0.05, 0.1, 0.1, 0.25, 1]) == [1, 0, 1, 0, 1, 1])
    }

    @Test func aJobHeldByItsRateHoldsNoOtherBackAndTheHeldResourceIsLeftOutOfPages() {
        let api = Resource(runID: "a", name: "api")
        var planner = ClaimPlanner(
            limit: 10, kinds: ["k"], now: 0, runs: ["a": .init(limit: 10, inUse: 0)], resources: [:],
            paces: [api: Pace(DurableRate(.perSecond(10)), tat: 0, pausedUntil: 0)], instant: Self.at(0))
        #expect(planner.nextPage()?.fullResources == [])
        let taken = planner.take([
            Self.job("a/api1", position: 0, resources: ["api"]), Self.job("a/api2", position: 1, resources: ["api"]),
            Self.job("a/free", position: 2),
        ])
        #expect(taken.map(\.key.jobID) == ["api1", "free"])
        #expect(planner.changedPaces == [api])
        #expect(planner.paces[api]?.tat == Self.at(0.1))
        #expect(planner.nextRelease == Self.at(0.1), "a worker with room claims again when the next may go")
        // The next claim at the same time leaves the held resource's jobs out of its pages.
        var next = ClaimPlanner(
            limit: 10, kinds: ["k"], now: 0, runs: ["a": .init(limit: 10, inUse: 0)], resources: [:],
            paces: planner.paces, instant: Self.at(0))
        #expect(next.nextPage()?.fullResources == [api])
    }

    @Test func aPauseHoldsAResourceWithOrWithoutARateUntilItsTime() {
        let paused = Pace(nil, tat: 0, pausedUntil: Self.at(2))
        let pausedRate = Pace(DurableRate(.perSecond(10), burst: 5), tat: 0, pausedUntil: Self.at(2))
        for pace in [paused, pausedRate] {
            let api = Resource(runID: "a", name: "api")
            let claim = { (time: Double) in
                ClaimPlanner.plan(
                    limit: 10, kinds: ["k"], now: Millis.of(epoch.addingTimeInterval(time)),
                    runs: ["a": .init(limit: 10, inUse: 0)], resources: [:], paces: [api: pace],
                    instant: Self.at(time),
                    candidates: [Self.job("a/x", position: 0, resources: ["api"]), Self.job("a/y", position: 1)]
                ).map(\.key.jobID)
            }
            #expect(claim(1.999) == ["y"])
            #expect(claim(2) == ["x", "y"])
        }
    }

    @Test func twoRunsWithTheSameResourceNameHaveAPaceEach() {
        let rate = DurableRate(.perSecond(10))
        let taken = ClaimPlanner.plan(
            limit: 10, kinds: ["k"], now: 0, runs: ["a": .init(limit: 10, inUse: 0), "b": .init(limit: 10, inUse: 0)],
            resources: [:],
            paces: [
                Resource(runID: "a", name: "api"): Pace(rate, tat: 0, pausedUntil: 0),
                Resource(runID: "b", name: "api"): Pace(rate, tat: Self.at(5), pausedUntil: 0),
            ], instant: Self.at(0),
            candidates: [
                Self.job("a/1", position: 0, resources: ["api"]), Self.job("a/2", position: 1, resources: ["api"]),
                Self.job("b/1", position: 0, resources: ["api"]),
            ])
        #expect(taken.map { "\($0.key.runID)/\($0.key.jobID)" } == ["a/1"])
    }

    @Test func aJobOfTwoRatedResourcesWaitsForBothAndMovesBothOn() {
        let (api, db) = (Resource(runID: "a", name: "api"), Resource(runID: "a", name: "db"))
        var planner = ClaimPlanner(
            limit: 10, kinds: ["k"], now: 0, runs: ["a": .init(limit: 10, inUse: 0)], resources: [:],
            paces: [
                api: Pace(DurableRate(.perSecond(10)), tat: 0, pausedUntil: 0),
                db: Pace(DurableRate(.perSecond(1)), tat: Self.at(0.5), pausedUntil: 0),
            ], instant: Self.at(0))
        let taken = planner.take([
            Self.job("a/both", position: 0, resources: ["api", "db"]),
            Self.job("a/api", position: 1, resources: ["api"]),
        ])
        #expect(taken.map(\.key.jobID) == ["api"], "db holds the first; the second goes")
        #expect(planner.changedPaces == [api])
        var later = ClaimPlanner(
            limit: 10, kinds: ["k"], now: 0, runs: ["a": .init(limit: 10, inUse: 0)], resources: [:],
            paces: planner.paces, instant: Self.at(0.5))
        #expect(later.take([Self.job("a/both", position: 0, resources: ["api", "db"])]).count == 1)
        #expect(later.paces[api]?.tat == Self.at(0.6))
        #expect(later.paces[db]?.tat == Self.at(1.5))
    }

    @Test func paceArithmeticSaturates() {
        var pace = Pace(DurableRate(.perHour(1), burst: Int.max), tat: Int64.max - 1, pausedUntil: 0)
        #expect(pace.tolerance == Rate.maximumSpacing.saturatingNanoseconds)
        pace.take(at: Int64.max - 1)
        #expect(pace.tat == Int64.max)
        let early = Pace(DurableRate(.perHour(1), burst: Int.max), tat: Int64.min + 1, pausedUntil: Int64.min)
        #expect(early.allowedAt == Int64.min)
        #expect(Pace.pauseEnd(epoch, now: epoch) == nil, "a pause that ends now changes nothing")
        #expect(
            Pace.pauseEnd(.distantFuture, now: epoch)
                == Self.at(0) + Rate.maximumSpacing.saturatingNanoseconds, "a pause reaches 2^32 s at most")
    }

    // MARK: - The worker

    /// A worker running a job, with room for more, claims again when the claim said a held job
    /// may go: not only when its job ends.
    @Test func aWorkerWithRoomClaimsAgainWhenAHeldJobMayGo() {
        var machine = WorkerStateMachine(
            policy: .init(
                limit: 4, kinds: ["k"], stopsWhenIdle: true, isShared: true, pollInterval: nil,
                renewalInterval: .seconds(100), gracePeriod: .zero))
        guard case .settle(_, claim: 4) = machine.next(now: epoch) else {
            Issue.record("claims first")
            return
        }
        let release = epoch.addingTimeInterval(0.1)
        let waiting = machine.settled(claimed: [JobKey(runID: "a", jobID: "1")], now: epoch, nextRelease: release)
        guard case .wait(let until) = waiting else {
            Issue.record("waits, got \(waiting)")
            return
        }
        #expect(until == release)
        guard case .settle(_, claim: 3) = machine.next(now: release) else {
            Issue.record("claims again at the release")
            return
        }
        // Full: no release to wait for, only the lease renewal.
        _ = machine.settled(
            claimed: ["2", "3", "4"].map { JobKey(runID: "a", jobID: $0) }, now: release,
            nextRelease: release.addingTimeInterval(0.1))
        guard case .wait(let renewal) = machine.next(now: release) else {
            Issue.record("waits")
            return
        }
        #expect(renewal == epoch.addingTimeInterval(100))
    }

    /// The same through a queue on a manual clock: a worker running a long job (10 s) starts
    /// the next job of a 10/s resource 100 ms later, not when its job ends.
    @Test(arguments: StoreKind.available)
    func aWorkerRunningAJobStartsTheNextHeldOneAtItsTime(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let clock = ManualClock()
            _ = try await Self.submitRun(store, count: 3, rates: ["api": DurableRate(.perSecond(10))])
            let worker = DurableQueue(store: store, clock: clock, wallClockStart: epoch)
            let started = Locked([String: Duration]())
            worker.register(add) { input, context in
                started.withLock { $0[context.jobID] = clock.now.offset }
                try await clock.sleep(for: .seconds(10))
                return input[0]
            }
            let draining = Task { try await worker.drain(limit: 4) }
            for (count, sleepers) in [(1, 2), (2, 3), (3, 3)] {
                try await waitUntil("\(count) started", guard: .seconds(10)) {
                    started.withLock(\.count) == count
                }
                // The handlers and the worker's wait for the next release (none after the last,
                // but its wait for its lease renewal: so the count does not say that the last
                // handler sleeps, which it must before the clock moves).
                let due = ManualClock.Instant(offset: .milliseconds(100 * (count - 1)) + .seconds(10))
                try await waitUntil("job \(count)'s handler asleep", guard: .seconds(10)) {
                    clock.pendingSleepers.contains(due)
                }
                try await clock.waitForSleepers(sleepers)
                if count < 3 { _ = clock.advance(by: .milliseconds(100)) }
            }
            _ = clock.advance(by: .seconds(11))
            try await withHangGuard(.seconds(20)) { try await draining.value }
            #expect(started.withLock { $0 } == ["j0": .zero, "j1": .milliseconds(100), "j2": .milliseconds(200)])
        }
    }

    /// An idle worker (nothing running, the next job held by its rate) sleeps until the job
    /// may go, as the store's outlook says, and drains the run at the rate.
    @Test(arguments: StoreKind.available)
    func anIdleWorkerSleepsUntilTheHeldJobMayGo(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let clock = ManualClock()
            _ = try await Self.submitRun(store, count: 3, rates: ["api": DurableRate(.perSecond(10))])
            let worker = DurableQueue(store: store, clock: clock, wallClockStart: epoch)
            let started = Locked([Duration]())
            worker.register(add) { input, _ in
                started.withLock { $0.append(clock.now.offset) }
                return input[0]
            }
            let draining = Task { try await worker.drain(limit: 4) }
            for count in 1...2 {
                try await waitUntil("\(count) started", guard: .seconds(10)) { started.withLock(\.count) == count }
                // The worker alone, asleep until the next may go. Waited for, not read once: the
                // worker may first sleep until then and be woken at once by the end of the job
                // it started (whose outcome it records before it sleeps again).
                try await waitUntil("the worker asleep until \(100 * count) ms", guard: .seconds(10)) {
                    clock.pendingSleepers.map(\.offset) == [.milliseconds(100 * count)]
                }
                _ = clock.advance(by: .milliseconds(100))
            }
            try await withHangGuard(.seconds(20)) { try await draining.value }
            #expect(started.withLock { $0 } == [.zero, .milliseconds(100), .milliseconds(200)])
        }
    }

    // MARK: - The stores

    /// A run "r" of `count` jobs of `add` using "api" at 10/s, burst 2, submitted at `epoch`.
    static func submitRun(
        _ store: any JobStore, runID: String = "r", count: Int = 20,
        rates: [String: DurableRate] = ["api": tenPerSecond],
        limits: [String: Int] = [:]
    ) async throws -> DurableQueue {
        let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
        var graph = DurableGraph()
        for index in 0..<count {
            try graph.add("j\(index)", add, input: [index], options: .init(resources: ["api"]))
        }
        #expect(
            try await queue.submit(graph, runID: runID, limit: 100, resourceLimits: limits, resourceRates: rates))
        return queue
    }

    static func claim(_ store: any JobStore, at seconds: Double, limit: Int = 100) async throws -> [ClaimedJob] {
        let now = epoch.addingTimeInterval(seconds)
        return try await store.claim(
            worker: "w", kinds: [add.name], limit: limit, now: now, leaseExpiry: now.addingTimeInterval(3_600))
    }

    @Test(arguments: StoreKind.available)
    func claimsGrantExactlyTheGCRAInstants(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            _ = try await Self.submitRun(store)
            for (time, expected) in Self.schedule {
                #expect(try await Self.claim(store, at: time).count == expected, "at t+\(time)")
            }
            // After the claim at t+3 (two went): the next may go at t+3.1, which the outlook of an
            // idle worker says (rounded up to the millisecond).
            let outlook = try await store.outlook(after: epoch.addingTimeInterval(3), kinds: [add.name])
            #expect(outlook.nextDueTime.map(Millis.of) == Millis.of(epoch.addingTimeInterval(3.1)))
            let (_, claimed, release) = try await (store as! any ReleaseTimes).recordAndClaim(
                [],
                thenClaim: Claim(
                    worker: "w", kinds: [add.name], limit: 5, now: epoch.addingTimeInterval(3.05),
                    leaseExpiry: epoch.addingTimeInterval(3_600)), now: epoch.addingTimeInterval(3.05))
            #expect(claimed.isEmpty)
            #expect(
                release.map(Millis.of) == Millis.of(epoch.addingTimeInterval(3.1)),
                "the claim says when the held job may go")
        }
    }

    @Test(arguments: StoreKind.available)
    func aRateAndALimitHoldTogether(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            _ = try await Self.submitRun(
                store, rates: ["api": DurableRate(.perSecond(10), burst: 5)], limits: ["api": 2])
            #expect(try await Self.claim(store, at: 0).count == 2, "the limit, though the burst allows 5")
            #expect(try await Self.claim(store, at: 1).count == 0, "still full")
        }
    }

    @Test(arguments: StoreKind.available)
    func aPauseHoldsTheResourceThenReleasesIt(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let queue = try await Self.submitRun(store, rates: ["api": DurableRate(.perSecond(100), burst: 3)])
            // At t+0 on the queue's manual clock: held until t+2. An earlier pause changes nothing.
            try await queue.pauseResource("api", of: "r", for: .seconds(2))
            try await store.pauseResource(
                "api", of: "r", until: epoch.addingTimeInterval(1), now: epoch.addingTimeInterval(0.5))
            #expect(try await Self.claim(store, at: 1.5).isEmpty)
            #expect(
                try await store.outlook(after: epoch.addingTimeInterval(1.5), kinds: [add.name]).nextDueTime
                    .map(Millis.of) == Millis.of(epoch.addingTimeInterval(2)))
            #expect(try await Self.claim(store, at: 2).count == 3, "then the burst")
            // A later pause extends it; a resource with no rate is held too.
            try await store.pauseResource("api", of: "r", until: epoch.addingTimeInterval(5), now: epoch)
            #expect(try await Self.claim(store, at: 4.9).isEmpty)
            #expect(try await Self.claim(store, at: 5).count == 3)
            // A pause of a run that does not exist does nothing.
            try await store.pauseResource("api", of: "nope", until: epoch.addingTimeInterval(9), now: epoch)
            #expect(try await store.run("nope") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aPauseHoldsAResourceThatHasOnlyALimit(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let queue = try await Self.submitRun(store, count: 3, rates: [:], limits: ["api": 5])
            try await queue.pauseResource("api", of: "r", for: .seconds(1))
            #expect(try await Self.claim(store, at: 0.5).isEmpty)
            #expect(try await Self.claim(store, at: 1).count == 3)
        }
    }

    @Test(arguments: StoreKind.available)
    func twoRunsSameNamedResourceAreIndependent(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            _ = try await Self.submitRun(store, runID: "one")
            _ = try await Self.submitRun(store, runID: "two")
            let claimed = try await Self.claim(store, at: 0)
            #expect(claimed.filter { $0.key.runID == "one" }.count == 2)
            #expect(claimed.filter { $0.key.runID == "two" }.count == 2)
            #expect(try await Self.claim(store, at: 0.1).count == 2, "one of each")
        }
    }

    @Test(arguments: StoreKind.available)
    func aJobGivenBackIsClaimedAgainUnderTheRate(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            _ = try await Self.submitRun(store, count: 2, rates: ["api": DurableRate(.perSecond(1))])
            let first = try await Self.claim(store, at: 0)
            #expect(first.count == 1)
            try await store.releaseLeases(of: first.map(\.key), worker: "w", now: epoch.addingTimeInterval(0.5))
            #expect(try await Self.claim(store, at: 0.6).isEmpty, "a resend is a request too")
            #expect(try await Self.claim(store, at: 1).count == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func appendedJobsMayUseAResourceWithOnlyARate(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            try await queue.open(runID: "o", limit: 10, resourceRates: ["api": DurableRate(.perSecond(10))])
            var graph = DurableGraph()
            try graph.add("a", add, input: [1], options: .init(resources: ["api"]))
            try graph.add("b", add, input: [2], options: .init(resources: ["api"]))
            #expect(try await queue.append(graph, to: "o") == 2)
            var other = DurableGraph()
            try other.add("c", add, input: [3], options: .init(resources: ["db"]))
            let error = await #expect(throws: DurableError.self) { try await queue.append(other, to: "o") }
            #expect(error?.code == .invalidGraph)
            #expect(try await Self.claim(store, at: 0).count == 1)
            // Opening again with another rate is another run.
            let refused = await #expect(throws: DurableError.self) {
                try await queue.open(runID: "o", limit: 10, resourceRates: ["api": DurableRate(.perSecond(11))])
            }
            #expect(refused?.code == .runIDInUse)
            #expect(try await !queue.open(runID: "o", limit: 10, resourceRates: ["api": DurableRate(.perSecond(10))]))
        }
    }

    /// The bound: a run with 2,000 rated resources (a host each, say) claims as the rule says,
    /// a pace each.
    @Test(arguments: StoreKind.available)
    func manyRatedResourcesEachKeepTheirPace(_ kind: StoreKind) async throws {
        let count = 2_000
        try await withTemporaryStore(kind) { file in
            let store = try await file.open()
            let queue = DurableQueue(store: store, clock: ManualClock(), wallClockStart: epoch)
            var graph = DurableGraph()
            var rates: [String: DurableRate] = [:]
            for index in 0..<count {
                // Two jobs per resource.
                for copy in 0..<2 {
                    try graph.add("j\(index)-\(copy)", add, input: [index], options: .init(resources: ["h\(index)"]))
                }
                rates["h\(index)"] = DurableRate(.perSecond(1))
            }
            try await queue.submit(graph, runID: "many", limit: 10_000, resourceRates: rates)
            #expect(try await Self.claim(store, at: 0, limit: 10_000).count == count, "one of each resource")
            #expect(try await Self.claim(store, at: 0.5, limit: 10_000).isEmpty)
            #expect(try await Self.claim(store, at: 1, limit: 10_000).count == count, "the second of each")
        }
    }

    @Test func aBurstBelowOneIsRefused() async throws {
        try await withTemporaryStore(.sqlite) { file in
            let queue = DurableQueue(store: try await file.open(), clock: ManualClock(), wallClockStart: epoch)
            let error = await #expect(throws: DurableError.self) {
                try await queue.open(runID: "o", resourceRates: ["api": DurableRate(.perSecond(1), burst: 0)])
            }
            #expect(error?.message == "resource 'api': its burst must be at least 1, got 0")
        }
    }

    @Test func aRunWithoutRatesKeepsItsFingerprint() {
        var run = DurableSubmission(
            runID: "r", limit: 4, resourceLimits: ["h": 2], failurePolicy: .cancelDependents, graph: DurableGraph(),
            criticalPaths: [], now: epoch)
        let before = run.fingerprint
        // What the store holds for such a run stored before rates (FNV-1a of "4", "h=2",
        // "cancelDependents"): opening it again matches.
        #expect(before == "477ea2422fbc0067")
        run.resourceRates = ["h": DurableRate(.perSecond(1))]
        #expect(run.fingerprint != before)
        run.resourceRates = [:]
        #expect(run.fingerprint == before)
    }

    /// A store of the schema before rates opens, migrates, and its runs claim as they did; a new
    /// run there has its rate.
    @Test(arguments: StoreKind.available)
    func aStoreOfTheSchemaBeforeRatesMigrates(_ kind: StoreKind) async throws {
        try await withTemporaryStore(kind) { file in
            switch kind {
            case .sqlite:
                let database = try DatabaseQueue(path: file.path)
                try SQLiteJobStore.migrator.migrate(database, upTo: "orchestra-3")
                try await database.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO runs (id, state, job_limit, fail_fast, fingerprint, created, open_for_jobs,
                                next_position, opened)
                            VALUES ('old', 'running', 8, 0, 'f', 0, 0, 1, 0);
                            INSERT INTO run_resources (run_id, name, resource_limit) VALUES ('old', 'api', 1);
                            INSERT INTO jobs (run_id, id, position, kind, input, state, waiting_on, priority,
                                critical_path, max_attempts, initial_delay_ns, multiplier, max_delay_ns, run_at)
                            VALUES ('old', 'a', 0, 'add', X'5B315D', 'ready', 0, 0, 1, 1, 0, 2, 0, 0);
                            INSERT INTO job_resources (run_id, job_id, name) VALUES ('old', 'a', 'api');
                            """)
                    #expect(
                        try String.fetchOne(db, sql: "SELECT value FROM orchestra_store WHERE key = 'schema'") == "3")
                }
                try database.close()
            case .postgres:
                let client = try #require(file.client)
                let old = try PostgresJobStore(client: client, schema: file.schema, location: "test", pollInterval: nil)
                try await client.query("CREATE SCHEMA \(unescaped: file.schema)")
                for statement in old.migrations.prefix(4).joined() {
                    try await client.query(PostgresQuery(unsafeSQL: statement))
                }
                let prefix = file.schema + "."
                for statement in [
                    """
                    INSERT INTO \(prefix)runs (id, state, job_limit, fail_fast, fingerprint, created, open_for_jobs,
                        next_position, opened)
                    VALUES ('old', 'running', 8, false, 'f', 0, false, 1, false)
                    """,
                    "INSERT INTO \(prefix)run_resources (run_id, name, resource_limit) VALUES ('old', 'api', 1)",
                    """
                    INSERT INTO \(prefix)jobs (run_id, id, position, kind, input, state, waiting_on, priority,
                        critical_path, max_attempts, initial_delay_ns, multiplier, max_delay_ns, run_at)
                    VALUES ('old', 'a', 0, 'add', decode('5b315d', 'hex'), 'ready', 0, 0, 1, 1, 0, 2, 0, 0)
                    """,
                    "INSERT INTO \(prefix)job_resources (run_id, job_id, name) VALUES ('old', 'a', 'api')",
                ] {
                    try await client.query(PostgresQuery(unsafeSQL: statement))
                }
            }
            let store = try await file.open()
            #expect(try await Self.claim(store, at: 0).map(\.key.jobID) == ["a"], "the old run claims as it did")
            _ = try await Self.submitRun(store, runID: "new")
            #expect(try await Self.claim(store, at: 0).count == 2, "a new run has its rate")
            #expect(try await Self.claim(store, at: 0.05).isEmpty)
        }
    }
}
