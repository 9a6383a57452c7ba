import Foundation
import Orchestra

/// The claim rules of durable jobs, in one place: which ready jobs a worker's claim takes, and
/// in what order. A store fetches candidate rows and marks the planned jobs running in the same
/// transaction; it encodes no rule of its own.
///
/// The rules:
/// - **Order.** The highest ``DurableJobOptions/priority`` first; within a priority, the longest
///   remaining path (the job's critical path, ``DurableSubmission/criticalPaths``); then the
///   job due first (its retry's time, or when it became ready); then the order the jobs were
///   added to their run (their position); then the run's id. `TaskGraph`'s scheduler
///   (`SchedulerStateMachine`) has the same order without due times: jobs due at the same time
///   start in the order it starts them (`ClaimOrderTests` checks it on both stores).
/// - **Room per run.** At most the run's `limit` of its jobs run at once.
/// - **Room per resource.** At most a resource's limit of the jobs of its run that name it run
///   at once (resources are a run's own: two runs naming the same resource have a limit each).
///   A job whose resource is full is passed over, and the jobs after it are still looked at:
///   it holds no other back. A resource the run gives no limit holds no job back (a store
///   refuses such a job when it is submitted or appended).
/// - **Rate per resource.** A resource with a rate (``DurableSubmission/resourceRates``) starts
///   its jobs no faster than the rate, across every claimer (a generic cell rate algorithm, as
///   `RateLimiter`): its ``Pace`` keeps a theoretical arrival time `tat`, and a job that uses
///   it is claimed at `now` only if `now >= max(tat - (burst - 1) * spacing, pausedUntil)`;
///   claiming it sets `tat = max(tat, now) + spacing`, so each job of a claim moves it on (a
///   claim takes at most `burst` jobs of the resource). A pause
///   (``JobStore/pauseResource(_:of:until:now:)``) holds every job of the resource until its
///   time, with or without a rate. A job held by a rate or a pause is passed over and holds no
///   other back, as for a full resource; a job given back or retried is claimed again under
///   the rule. The store writes the paces the
///   claim moved (``changedPaces``) in the claim's transaction, and ``nextRelease`` says when
///   a held resource lets its next job go (a worker waits until then).
/// - **The claim.** At most its `limit` jobs, only of the claimer's `kinds` (a worker never
///   takes a job it has no handler for), only jobs due at its `now`.
///
/// A store reads each run's limit and running jobs and each resource's limit and use, then
/// calls ``nextPage()``, fetches the ready jobs the ``Page`` asks for in the order of
/// ``orderBy(_:)`` (an index walk), hands them to ``take(_:)``, marks the jobs it returns
/// running, and asks for the next page until there is none. The jobs claimed are then those
/// ``plan(limit:kinds:now:runs:resources:paces:instant:candidates:)`` picks from every ready job at once (up
/// to the order between runs' jobs equal in every key, see ``orderBy(_:)``).
///
/// The planner counts the room (and moves the paces) it is given: the store keeps claims that
/// may run at once from counting the same room or reading the same pace. SQLite has one writer;
/// PostgreSQL's claims take a store-wide advisory lock before they count (and lock the rows
/// they read, skipping those another transaction holds).
///
/// ```swift
/// var planner = ClaimPlanner(limit: 8, kinds: ["fetch"], now: now, runs: rooms, resources: resourceRooms)
/// while let page = planner.nextPage() {
///     let rows = try fetch(page)            // the first page.size ready jobs of page.runs, …
///     markRunning(planner.take(rows))
/// }
/// ```
///
/// Complexity: ``take(_:)`` is O(n log n) in the rows of a page; a claim reads at most `limit`
/// pages (see ``Page``).
package struct ClaimPlanner: Sendable {
    /// A ready job as a store fetched it.
    package struct Candidate: Sendable, Hashable {
        /// Which job.
        package var key: JobKey
        /// Its kind's name.
        package var kind: String
        /// Its priority: higher first.
        package var priority: Int
        /// Its longest remaining path: longer first, within a priority.
        package var criticalPath: Double
        /// When it is due (milliseconds since 1970, as the stores keep times): earlier first.
        package var due: Int64
        /// Its position in its run: the order the run's jobs were added.
        package var position: Int
        /// The resources it uses while it runs (resources of its run).
        package var resources: [String]

        package init(
            key: JobKey, kind: String, priority: Int, criticalPath: Double, due: Int64, position: Int,
            resources: [String]
        ) {
            self.key = key
            self.kind = kind
            self.priority = priority
            self.criticalPath = criticalPath
            self.due = due
            self.position = position
            self.resources = resources
        }
    }

    /// A limit and how much of it is in use: a run's limit and its running jobs, or a resource's
    /// limit and the running jobs that use it.
    package struct Room: Sendable, Hashable {
        package var limit: Int
        package var inUse: Int

        package init(limit: Int, inUse: Int) {
            self.limit = limit
            self.inUse = inUse
        }

        /// The places left: never negative (more running than the limit leaves none).
        package var free: Int {
            let used = max(0, inUse)
            return limit > used ? limit - used : 0
        }
    }

    /// A resource of a run.
    package struct Resource: Sendable, Hashable, Comparable {
        package var runID: String
        package var name: String

        package init(runID: String, name: String) {
            self.runID = runID
            self.name = name
        }

        package static func < (lhs: Resource, rhs: Resource) -> Bool {
            (lhs.runID, lhs.name) < (rhs.runID, rhs.name)
        }
    }

    /// When the jobs of a resource may start: its rate (if it has one), its theoretical arrival
    /// time and its pause, as a store keeps them; times in nanoseconds since 1970
    /// (milliseconds are too coarse for 30 a second).
    package struct Pace: Sendable, Hashable {
        /// The time between two starts; 0 for a resource without a rate (a pause only).
        package var spacing: Int64
        /// How far ahead of its theoretical arrival time a start may be: `spacing × (burst − 1)`.
        package var tolerance: Int64
        /// The theoretical arrival time: when the resource's burst would be whole again.
        package var tat: Int64
        /// No job of the resource starts before this time.
        package var pausedUntil: Int64

        /// A pace of `spacing` (nanoseconds) with `burst` starts at once, at `tat` and paused
        /// until `pausedUntil`. The tolerance is at most `Rate.maximumSpacing` (as
        /// `RateLimiter`'s), so no burst overflows.
        package init(spacing: Int64, burst: Int, tat: Int64, pausedUntil: Int64) {
            self.spacing = max(0, spacing)
            let extra = Int64(clamping: max(0, burst - 1))
            let cap = Rate.maximumSpacing.saturatingNanoseconds
            let (product, overflow) = self.spacing.multipliedReportingOverflow(by: extra)
            tolerance = overflow ? cap : min(product, cap)
            self.tat = tat
            self.pausedUntil = pausedUntil
        }

        /// The pace of `rate` at `tat`, paused until `pausedUntil`.
        package init(_ rate: DurableRate?, tat: Int64, pausedUntil: Int64) {
            self.init(
                spacing: rate?.spacingNanoseconds ?? 0, burst: rate?.burst ?? 1, tat: tat, pausedUntil: pausedUntil)
        }

        /// The earliest time its next job may start: `max(tat − tolerance, pausedUntil)`.
        package var allowedAt: Int64 {
            let (early, overflow) = tat.subtractingReportingOverflow(tolerance)
            return max(overflow ? Int64.min : early, pausedUntil)
        }

        /// The end of a pause until `until` asked at `now`, in nanoseconds: at most
        /// `Rate.maximumSpacing` past `now`; `nil` for a pause that ends by `now` (it changes
        /// nothing).
        package static func pauseEnd(_ until: Date, now: Date) -> Int64? {
            let (end, start) = (Nanos.of(until), Nanos.of(now))
            guard end > start else { return nil }
            let (cap, overflow) = start.addingReportingOverflow(Rate.maximumSpacing.saturatingNanoseconds)
            return overflow ? end : min(end, cap)
        }

        /// Whether a job may start at `now`.
        package func allows(at now: Int64) -> Bool { allowedAt <= now }

        /// A job starts at `now`: `tat = max(tat, now) + spacing` (saturating).
        package mutating func take(at now: Int64) {
            let (next, overflow) = max(tat, now).addingReportingOverflow(spacing)
            tat = overflow ? Int64.max : next
        }
    }

    /// What a store fetches next: the first ``size`` ready jobs in the order of
    /// ``orderBy(_:)`` that are due at the claim's time, of its kinds, of one of ``runs`` and
    /// that use none of ``fullResources``.
    ///
    /// Why a page suffices: the jobs it leaves out would be passed over anyway (their run or a
    /// resource is full, and a claim only fills them further), so the first job of every page
    /// is taken, and a claim of `limit` jobs reads at most `limit` pages; one, unless runs or
    /// resources fill during the claim. Each page is a walk of the store's claim index in
    /// order that stops after ``size`` rows, whatever the number of ready jobs (it steps over
    /// the ready jobs of full runs and resources that come first, as any claim in this order
    /// must).
    package struct Page: Sendable, Hashable {
        /// The runs with room, sorted.
        package var runs: [String]
        /// The resources of those runs that are full, or held by their rate or a pause, sorted.
        package var fullResources: [Resource]
        /// How many rows to fetch at most.
        package var size: Int
    }

    /// How many rows a page asks for.
    package enum PageSize: Sendable, Hashable {
        /// As many as the jobs still wanted: for a store in the process (SQLite), where another
        /// page costs no round trip but every row read is decoded.
        case wanted
        /// Four times the jobs still wanted, at least 64: for a server (PostgreSQL), where the
        /// jobs passed over are replaced without another round trip.
        case overfetch
    }

    /// The claim's limit.
    package let limit: Int
    package let kinds: Set<String>
    package let now: Int64
    /// The claim's time in nanoseconds since 1970, for the paces.
    package let instant: Int64
    private let pageSize: PageSize
    /// Free places per run; a run that is not listed has none.
    private var runRoom: [String: Int]
    /// Free places per resource with a limit.
    private var resourceRoom: [Resource: Int]
    /// The paces of the resources with a rate or a pause, as the claim moves them.
    package private(set) var paces: [Resource: Pace]
    /// The resources whose pace the claim moved: the store writes their `tat`.
    package private(set) var changedPaces: Set<Resource> = []
    /// The jobs planned so far, in the order they are claimed.
    package private(set) var planned: [Candidate] = []
    private var plannedKeys: Set<JobKey> = []
    /// The size of the last page asked for, while its rows are awaited.
    private var pending: Int?
    /// Every ready job that could be claimed has been seen.
    private var exhausted = false

    /// A planner for a claim of up to `limit` jobs of `kinds`, due at `now` (milliseconds since
    /// 1970), with `runs` (the runs that are running: their limit and running jobs),
    /// `resources` (the limits of their resources and the running jobs that use each) and
    /// `paces` (their resources' rates and pauses) at `instant` (the claim's time in
    /// nanoseconds, `now` in nanoseconds if not given); its pages of `pageSize`.
    package init(
        limit: Int, kinds: Set<String>, now: Int64, runs: [String: Room], resources: [Resource: Room],
        paces: [Resource: Pace] = [:], instant: Int64? = nil, pageSize: PageSize = .overfetch
    ) {
        self.limit = max(0, limit)
        self.kinds = kinds
        self.now = now
        let (scaled, overflow) = now.multipliedReportingOverflow(by: 1_000_000)
        self.instant = instant ?? (overflow ? (now < 0 ? Int64.min : Int64.max) : scaled)
        self.pageSize = pageSize
        runRoom = runs.mapValues(\.free)
        resourceRoom = resources.mapValues(\.free)
        self.paces = paces
    }

    /// The earliest time after the claim's (nanoseconds since 1970) at which a resource of a run
    /// with room, held by its rate or a pause, lets its next job start; `nil` if none is held.
    /// A worker with room for more jobs claims again then. (It may find no job of that
    /// resource ready: the pages leave held resources out, so the planner cannot know.)
    package var nextRelease: Int64? {
        paces.filter { (runRoom[$0.key.runID] ?? 0) > 0 }.values.map(\.allowedAt).filter { $0 > instant }.min()
    }

    /// Whether `resource` holds its jobs back now: full, or held by its rate or pause.
    private func holds(_ resource: Resource) -> Bool {
        // A resource without a limit is not in `resourceRoom`: it holds nothing back.
        if let room = resourceRoom[resource], room <= 0 { return true }
        if let pace = paces[resource], !pace.allows(at: instant) { return true }
        return false
    }

    /// Whether `first` is claimed before `second` when both can be: the claim order.
    package static func precedes(_ first: Candidate, _ second: Candidate) -> Bool {
        if first.priority != second.priority { return first.priority > second.priority }
        if first.criticalPath != second.criticalPath { return first.criticalPath > second.criticalPath }
        if first.due != second.due { return first.due < second.due }
        if first.position != second.position { return first.position < second.position }
        // Byte order: the same in every process, whatever the strings' normalization.
        if first.key.runID != second.key.runID {
            return first.key.runID.utf8.lexicographicallyPrecedes(second.key.runID.utf8)
        }
        return first.key.jobID.utf8.lexicographicallyPrecedes(second.key.jobID.utf8)
    }

    /// The claim order as an SQL `ORDER BY` list over the `jobs` table's columns, each prefixed
    /// with `alias` (`"j."`, or `""`): the order of both stores' claim indexes. It ends at the
    /// position, as the indexes do: ordering by the run's id too would make SQLite sort the
    /// rows of every page, a cost on every claim. So between jobs of different runs equal in all
    /// four, a page may end after either; inside a page, ``precedes(_:_:)`` takes the lower run
    /// id first.
    package static func orderBy(_ alias: String) -> String {
        ["priority DESC", "critical_path DESC", "run_at", "position"].map { alias + $0 }.joined(separator: ", ")
    }

    /// What to fetch next, or `nil` when the claim is complete: it has `limit` jobs, no run has
    /// room left, or the last page held every job that could be claimed.
    package mutating func nextPage() -> Page? {
        let wanted = limit - planned.count
        guard wanted > 0, !exhausted else { return nil }
        let runs = runRoom.filter { $0.value > 0 }.keys.sorted()
        guard !runs.isEmpty else { return nil }
        let open = Set(runs)
        let full = Set(resourceRoom.keys).union(paces.keys).filter { open.contains($0.runID) && holds($0) }.sorted()
        let size =
            switch pageSize {
            case .wanted: wanted
            case .overfetch: max(64, wanted > Int.max / 4 ? Int.max : wanted * 4)
            }
        pending = size
        return Page(runs: runs, fullResources: full, size: size)
    }

    /// Plans the claim of `rows` (a page's rows, in any order; rows that cannot be claimed are
    /// passed over) and returns the jobs to claim from them, in claim order.
    package mutating func take(_ rows: [Candidate]) -> [Candidate] {
        let before = planned.count
        for candidate in rows.sorted(by: Self.precedes) where planned.count < limit {
            guard kinds.contains(candidate.kind), candidate.due <= now, !plannedKeys.contains(candidate.key),
                let places = runRoom[candidate.key.runID], places > 0
            else { continue }
            if !candidate.resources.isEmpty {
                let resources = Set(candidate.resources).map { Resource(runID: candidate.key.runID, name: $0) }
                guard !resources.contains(where: { holds($0) }) else { continue }
                for resource in resources {
                    if resourceRoom[resource] != nil { resourceRoom[resource]! -= 1 }
                    if paces[resource] != nil {
                        paces[resource]!.take(at: instant)
                        changedPaces.insert(resource)
                    }
                }
            }
            runRoom[candidate.key.runID] = places - 1
            planned.append(candidate)
            plannedKeys.insert(candidate.key)
        }
        // A short page held every job left; a page that gave nothing would give nothing again
        // (a store's page always gives its first row, unless its filter differs from the page's).
        if let size = pending, rows.count < size || planned.count == before { exhausted = true }
        pending = nil
        return Array(planned[before...])
    }

    /// The jobs a claim takes from every ready job at once (`candidates`, in any order): the
    /// rules without the paging, for tests and for reading.
    package static func plan(
        limit: Int, kinds: Set<String>, now: Int64, runs: [String: Room], resources: [Resource: Room],
        paces: [Resource: Pace] = [:], instant: Int64? = nil, candidates: [Candidate]
    ) -> [Candidate] {
        var planner = ClaimPlanner(
            limit: limit, kinds: kinds, now: now, runs: runs, resources: resources, paces: paces, instant: instant)
        return planner.take(candidates)
    }
}
