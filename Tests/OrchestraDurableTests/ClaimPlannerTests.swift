import Foundation
@_spi(Simulation) import Orchestra
import TestSupport
import Testing

@testable import OrchestraDurable

/// The claim rules alone: ``ClaimPlanner`` without a store.
@Suite("ClaimPlanner", .takesTurns)
struct ClaimPlannerTests {
    /// A ready job: `"run/job"`, of kind "k" and due at 0 unless said otherwise (the claims of
    /// ``theRules(_:)`` are at 100).
    static func job(
        _ name: String, priority: Int = 0, path: Double = 1, due: Int64 = 0, position: Int,
        resources: [String] = [], kind: String = "k"
    ) -> ClaimPlanner.Candidate {
        let parts = name.split(separator: "/").map(String.init)
        return ClaimPlanner.Candidate(
            key: JobKey(runID: parts[0], jobID: parts[1]), kind: kind, priority: priority, criticalPath: path,
            due: due, position: position, resources: resources)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var limit = 10
        var kinds: Set<String> = ["k"]
        /// Each run's limit and running jobs.
        var runs: [String: ClaimPlanner.Room] = ["a": .init(limit: 10, inUse: 0)]
        /// Each resource (`"run/name"`): its limit and the running jobs that use it.
        var resources: [String: ClaimPlanner.Room] = [:]
        var jobs: [ClaimPlanner.Candidate]
        /// The jobs claimed, `"run/job"`, in claim order.
        var claimed: [String]

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "a run's limit", runs: ["a": .init(limit: 2, inUse: 0)],
            jobs: (0..<4).map { job("a/\($0)", position: $0) }, claimed: ["a/0", "a/1"]),
        Case(
            name: "a run's running jobs take its room", runs: ["a": .init(limit: 3, inUse: 2)],
            jobs: (0..<4).map { job("a/\($0)", position: $0) }, claimed: ["a/0"]),
        Case(
            name: "a run with no room", runs: ["a": .init(limit: 2, inUse: 2), "b": .init(limit: 1, inUse: 5)],
            jobs: [job("a/0", position: 0), job("b/0", position: 0)], claimed: []),
        Case(
            name: "a run that is not running (not listed) has no room", runs: ["a": .init(limit: 5, inUse: 0)],
            jobs: [job("gone/0", priority: 9, position: 0), job("a/0", position: 0)], claimed: ["a/0"]),
        Case(
            name: "the claim's limit", limit: 2, runs: ["a": .init(limit: 10, inUse: 0)],
            jobs: (0..<4).map { job("a/\($0)", position: $0) }, claimed: ["a/0", "a/1"]),
        Case(
            name: "a claim of zero takes nothing", limit: 0,
            jobs: [job("a/0", position: 0)], claimed: []),
        Case(
            name: "priority, then critical path, then due time, then position",
            jobs: [
                job("a/late", path: 5, due: 20, position: 0),
                job("a/short", path: 1, position: 1),
                job("a/urgent", priority: 1, path: 1, position: 2),
                job("a/second", path: 5, due: 10, position: 4),
                job("a/first", path: 5, due: 10, position: 3),
                job("a/low", priority: -1, path: 9, position: 5),
            ],
            claimed: ["a/urgent", "a/first", "a/second", "a/late", "a/short", "a/low"]),
        Case(
            name: "ties between runs go to the lower run id",
            runs: ["a": .init(limit: 5, inUse: 0), "b": .init(limit: 5, inUse: 0)],
            jobs: [job("b/0", position: 0), job("a/0", position: 0), job("b/1", position: 1)],
            claimed: ["a/0", "b/0", "b/1"]),
        Case(
            name: "a full resource holds no other job back",
            resources: ["a/h": .init(limit: 1, inUse: 0)],
            jobs: [
                job("a/0", position: 0, resources: ["h"]), job("a/1", position: 1, resources: ["h"]),
                job("a/2", position: 2),
            ],
            claimed: ["a/0", "a/2"]),
        Case(
            name: "a resource full before the claim",
            resources: ["a/h": .init(limit: 2, inUse: 2), "a/g": .init(limit: 2, inUse: 1)],
            jobs: [
                job("a/0", position: 0, resources: ["h"]), job("a/1", position: 1, resources: ["g"]),
                job("a/2", position: 2, resources: ["g"]),
            ],
            claimed: ["a/1"]),
        Case(
            name: "a job of two resources waits for both",
            resources: ["a/h": .init(limit: 3, inUse: 0), "a/g": .init(limit: 1, inUse: 0)],
            jobs: [
                job("a/0", position: 0, resources: ["h", "g"]), job("a/1", position: 1, resources: ["g", "h"]),
                job("a/2", position: 2, resources: ["h"]), job("a/3", position: 3, resources: ["h"]),
            ],
            claimed: ["a/0", "a/2", "a/3"]),
        Case(
            name: "a resource named twice by a job counts once",
            resources: ["a/h": .init(limit: 2, inUse: 0)],
            jobs: [job("a/0", position: 0, resources: ["h", "h"]), job("a/1", position: 1, resources: ["h"])],
            claimed: ["a/0", "a/1"]),
        Case(
            name: "runs naming the same resource have a limit each",
            runs: ["a": .init(limit: 5, inUse: 0), "b": .init(limit: 5, inUse: 0)],
            resources: ["a/h": .init(limit: 1, inUse: 0), "b/h": .init(limit: 1, inUse: 0)],
            jobs: [
                job("a/0", position: 0, resources: ["h"]), job("a/1", position: 1, resources: ["h"]),
                job("b/0", position: 2, resources: ["h"]), job("b/1", position: 3, resources: ["h"]),
            ],
            claimed: ["a/0", "b/0"]),
        Case(
            name: "a resource without a limit holds nothing back",
            resources: ["a/h": .init(limit: 1, inUse: 1)],
            jobs: [job("a/0", position: 0, resources: ["unlisted"]), job("a/1", position: 1, resources: ["h"])],
            claimed: ["a/0"]),
        Case(
            name: "only the claimer's kinds", kinds: ["k", "other"],
            jobs: [
                job("a/0", position: 0, kind: "nobody"), job("a/1", position: 1, kind: "other"),
                job("a/2", position: 2),
            ],
            claimed: ["a/1", "a/2"]),
        Case(
            name: "only jobs due now",
            jobs: [job("a/0", due: 101, position: 0), job("a/1", due: 100, position: 1)], claimed: ["a/1"]),
        Case(
            name: "a job listed twice is claimed once",
            jobs: [job("a/0", position: 0), job("a/0", position: 0)], claimed: ["a/0"]),
    ]

    static func resources(_ rooms: [String: ClaimPlanner.Room]) -> [ClaimPlanner.Resource: ClaimPlanner.Room] {
        Dictionary(
            uniqueKeysWithValues: rooms.map { name, room in
                let parts = name.split(separator: "/").map(String.init)
                return (ClaimPlanner.Resource(runID: parts[0], name: parts[1]), room)
            })
    }

    @Test(arguments: cases) func theRules(_ test: Case) {
        let plan = ClaimPlanner.plan(
            limit: test.limit, kinds: test.kinds, now: 100, runs: test.runs, resources: Self.resources(test.resources),
            candidates: test.jobs)
        #expect(plan.map { "\($0.key.runID)/\($0.key.jobID)" } == test.claimed)
    }

    @Test func aPlannerWithNothingToDoAsksForNoPage() {
        var full = ClaimPlanner(
            limit: 5, kinds: ["k"], now: 0, runs: ["a": .init(limit: 1, inUse: 1)], resources: [:])
        #expect(full.nextPage() == nil)
        var none = ClaimPlanner(limit: 0, kinds: ["k"], now: 0, runs: ["a": .init(limit: 1, inUse: 0)], resources: [:])
        #expect(none.nextPage() == nil)
    }

    @Test func aPageNamesTheRunsWithRoomAndTheFullResources() throws {
        var planner = ClaimPlanner(
            limit: 3, kinds: ["k"], now: 0,
            runs: ["b": .init(limit: 2, inUse: 0), "a": .init(limit: 2, inUse: 0), "full": .init(limit: 1, inUse: 1)],
            resources: Self.resources([
                "a/h": .init(limit: 1, inUse: 1), "a/g": .init(limit: 1, inUse: 0), "full/h": .init(limit: 1, inUse: 1),
            ]))
        let next = planner.nextPage()
        let page = try #require(next)
        #expect(page.runs == ["a", "b"])
        #expect(page.fullResources == [ClaimPlanner.Resource(runID: "a", name: "h")])
        #expect(page.size == 64)
        // A short page held every claimable job: no other page.
        #expect(planner.take([Self.job("a/0", position: 0, resources: ["g"])]).count == 1)
        #expect(planner.nextPage() == nil)
    }

    /// A store as the planner's pages describe it: the first `size` ready jobs in the SQL order,
    /// of the page's runs, using none of its full resources, due, of the claim's kinds; the
    /// jobs taken are marked (no longer ready).
    static func claimByPages(
        _ planner: inout ClaimPlanner, from jobs: [ClaimPlanner.Candidate]
    ) -> (claimed: [ClaimPlanner.Candidate], pages: Int) {
        var ready = jobs.sorted(by: ClaimPlanner.precedes)
        var claimed: [ClaimPlanner.Candidate] = []
        var pages = 0
        while let page = planner.nextPage() {
            pages += 1
            let runs = Set(page.runs)
            let full = Set(page.fullResources)
            let rows = ready.filter { job in
                runs.contains(job.key.runID) && job.due <= planner.now && planner.kinds.contains(job.kind)
                    && !job.resources.contains { full.contains(ClaimPlanner.Resource(runID: job.key.runID, name: $0)) }
            }.prefix(page.size)
            let taken = planner.take(Array(rows))
            let keys = Set(taken.map(\.key))
            ready.removeAll { keys.contains($0.key) }
            claimed += taken
        }
        return (claimed, pages)
    }

    /// Random ready jobs in a few runs with small limits and shared resource names: claiming
    /// page by page, as the stores do, takes exactly what a plan over every job at once takes,
    /// in at most `limit` pages.
    @Test(arguments: 0..<40) func pagesClaimWhatOnePlanClaims(_ round: Int) {
        let seed = UInt64(0x5EED_0000 + round)
        var random = SplitMix64(seed: seed)
        let runIDs = ["r0", "r1", "r2", "r3"]
        let names = ["h0", "h1", "h2"]
        var runs: [String: ClaimPlanner.Room] = [:]
        var resources: [ClaimPlanner.Resource: ClaimPlanner.Room] = [:]
        for run in runIDs {
            runs[run] = .init(limit: random.next(in: 1...40), inUse: random.next(in: 0...3))
            for name in names where random.next(in: 0...3) > 0 {
                resources[.init(runID: run, name: name)] = .init(
                    limit: random.next(in: 1...6), inUse: random.next(in: 0...2))
            }
        }
        let jobs = (0..<random.next(in: 0...600)).map { index in
            let run = runIDs[random.next(in: 0...3)]
            let uses = names.filter { name in
                resources[.init(runID: run, name: name)] != nil && random.next(in: 0...4) == 0
            }
            // Positions unique across runs: between runs equal in every key, the order is the
            // store's (see ClaimPlanner.orderBy).
            return ClaimPlanner.Candidate(
                key: JobKey(runID: run, jobID: "j\(index)"), kind: random.next(in: 0...9) == 0 ? "other" : "k",
                priority: random.next(in: 0...5) == 0 ? 1 : 0, criticalPath: Double(random.next(in: 1...3)),
                due: Int64(random.next(in: 0...9) == 0 ? 2 : 0), position: index, resources: uses)
        }
        let limit = random.next(in: 1...80)
        let expected = ClaimPlanner.plan(
            limit: limit, kinds: ["k"], now: 1, runs: runs, resources: resources, candidates: jobs)
        var planner = ClaimPlanner(
            limit: limit, kinds: ["k"], now: 1, runs: runs, resources: resources,
            pageSize: round.isMultiple(of: 2) ? .wanted : .overfetch)
        let (claimed, pages) = Self.claimByPages(&planner, from: jobs)
        #expect(claimed.map { $0.key } == expected.map { $0.key }, "seed \(seed)")
        #expect(pages <= max(1, limit), "seed \(seed)")
        // The rules hold: no run and no resource over its limit.
        for (run, room) in runs {
            #expect(claimed.filter { $0.key.runID == run }.count <= room.free, "seed \(seed), run \(run)")
        }
        for (resource, room) in resources {
            let using = claimed.filter { $0.key.runID == resource.runID && $0.resources.contains(resource.name) }
            #expect(using.count <= room.free, "seed \(seed), resource \(resource)")
        }
    }

    /// 100k ready jobs of one run, the first half on a resource that is full: a claim of 8
    /// reads one page (of 8 rows, or 64).
    @Test(arguments: [ClaimPlanner.PageSize.wanted, .overfetch])
    func aClaimReadsOnePageWhateverTheReadyJobs(_ size: ClaimPlanner.PageSize) {
        let jobs = (0..<100_000).map { index in
            Self.job("a/\(index)", position: index, resources: index < 50_000 ? ["h"] : [])
        }
        var planner = ClaimPlanner(
            limit: 8, kinds: ["k"], now: 0, runs: ["a": .init(limit: 100, inUse: 0)],
            resources: Self.resources(["a/h": .init(limit: 4, inUse: 4)]), pageSize: size)
        let (claimed, pages) = Self.claimByPages(&planner, from: jobs)
        #expect(claimed.map { $0.key.jobID } == (50_000..<50_008).map { "\($0)" })
        #expect(pages == 1)
    }
}

extension SplitMix64 {
    fileprivate mutating func next(in range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
}
