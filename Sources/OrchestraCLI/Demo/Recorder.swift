import Orchestra

/// One row of a scenario's timeline: a simulated download, or a helper step such as a token
/// refresh.
struct LaneSpec: Sendable {
    let name: String
    /// Whether the lane is one of the downloads: it counts towards progress and concurrency.
    let isDownload: Bool

    static func download(_ name: String) -> LaneSpec { LaneSpec(name: name, isDownload: true) }
    static func helper(_ name: String) -> LaneSpec { LaneSpec(name: name, isDownload: false) }
}

/// A stretch of time on a lane.
struct Segment: Sendable {
    enum Kind: Sendable {
        /// Suspended: at a semaphore, a limiter, a gate, or for a shared refresh.
        case waiting
        /// Working (the simulated download runs).
        case running
        /// Worked, and that attempt failed.
        case failed
    }

    var kind: Kind
    let start: Duration
    var end: Duration?
}

/// How a lane's job ended, with a short detail for the timeline ("on attempt 3", an error).
struct Outcome: Sendable {
    let succeeded: Bool
    let detail: String?

    static let ok = Outcome(succeeded: true, detail: nil)
    static func ok(_ detail: String) -> Outcome { Outcome(succeeded: true, detail: detail) }
    static func failed(_ error: any Error) -> Outcome { Outcome(succeeded: false, detail: Format.error(error)) }
}

/// A line of the scenario's running log.
struct LogEntry: Sendable {
    enum Tone: Sendable { case plain, good, bad, attention }

    enum Content: Sendable {
        case note(String, Tone)
        /// A download finished: `done` of `total` now.
        case finished(lane: String, Outcome, done: Int, total: Int)
    }

    let time: Duration
    let content: Content
}

/// What a scenario recorded, for the timeline and the summary line.
struct RecorderReport: Sendable {
    struct Lane: Sendable {
        let spec: LaneSpec
        let segments: [Segment]
        let outcome: Outcome?
        let finishedAt: Duration?
    }

    let lanes: [Lane]
    let wallTime: Duration
    let maxConcurrency: Int
    let succeeded: Int
    let downloads: Int
}

/// Progress now, for the live bar.
struct ProgressSnapshot: Sendable {
    let done: Int
    let total: Int
    let running: Int
    let waiting: Int
    let elapsed: Duration
}

/// Records, from any task, when each lane waits, works and finishes, plus the log lines the
/// scenario writes. Thread-safe through the project's `Locked`.
final class Recorder: Sendable {
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    private let indices: [String: Int]
    private let state: Locked<RecorderState>

    init(lanes: [LaneSpec]) {
        var indices: [String: Int] = [:]
        for (index, lane) in lanes.enumerated() {
            precondition(indices[lane.name] == nil, "Recorder: lane '\(lane.name)' is declared twice")
            indices[lane.name] = index
        }
        self.indices = indices
        state = Locked(RecorderState(lanes: lanes.map { RecorderState.LaneState(spec: $0) }))
        origin = clock.now
    }

    /// Time since the scenario started.
    var elapsed: Duration { clock.now - origin }

    /// The index of the lane named `name`; the scenario must have declared it.
    func lane(named name: String) -> Int {
        guard let index = indices[name] else {
            preconditionFailure("Recorder: no lane named '\(name)'; declare it in the scenario's lanes")
        }
        return index
    }

    /// Starts a segment of `kind` on the lane, ending the one it had open.
    func open(_ lane: Int, _ kind: Segment.Kind) {
        let now = elapsed
        state.withLock { $0.open(lane, kind, at: now) }
    }

    /// Ends the lane's open segment; a running one becomes `.failed` if `failed`.
    func close(_ lane: Int, failed: Bool) {
        let now = elapsed
        state.withLock { $0.close(lane, failed: failed, at: now) }
    }

    /// The lane's job is over.
    func finish(_ lane: Int, _ outcome: Outcome) {
        let now = elapsed
        state.withLock { $0.finish(lane, outcome, at: now) }
    }

    /// Adds a line to the log.
    func note(_ text: String, tone: LogEntry.Tone = .plain) {
        let now = elapsed
        state.withLock { $0.log.append(LogEntry(time: now, content: .note(text, tone))) }
    }

    /// The log lines added since the last call.
    func takeNewEntries() -> [LogEntry] {
        state.withLock { state in
            defer { state.shown = state.log.count }
            return Array(state.log[state.shown...])
        }
    }

    func progress() -> ProgressSnapshot {
        let now = elapsed
        return state.withLock { $0.progress(at: now) }
    }

    /// Everything recorded; open segments end now.
    func report() -> RecorderReport {
        let now = elapsed
        return state.withLock { $0.report(at: now) }
    }
}

/// The recorder's state, only touched under its lock.
private struct RecorderState {
    struct LaneState {
        let spec: LaneSpec
        var segments: [Segment] = []
        var outcome: Outcome?
        var finishedAt: Duration?

        var openKind: Segment.Kind? {
            guard let last = segments.last, last.end == nil else { return nil }
            return last.kind
        }
    }

    var lanes: [LaneState]
    var log: [LogEntry] = []
    var shown = 0
    var running = 0
    var maxRunning = 0

    var total: Int { lanes.count { $0.spec.isDownload } }
    var done: Int { lanes.count { $0.spec.isDownload && $0.outcome != nil } }

    mutating func open(_ lane: Int, _ kind: Segment.Kind, at now: Duration) {
        if lanes[lane].openKind == kind { return }
        close(lane, failed: false, at: now)
        lanes[lane].segments.append(Segment(kind: kind, start: now))
        if kind == .running, lanes[lane].spec.isDownload {
            running += 1
            maxRunning = max(maxRunning, running)
        }
    }

    mutating func close(_ lane: Int, failed: Bool, at now: Duration) {
        guard let kind = lanes[lane].openKind else { return }
        let last = lanes[lane].segments.count - 1
        lanes[lane].segments[last].end = now
        if kind == .running {
            if failed { lanes[lane].segments[last].kind = .failed }
            if lanes[lane].spec.isDownload { running -= 1 }
        }
    }

    mutating func finish(_ lane: Int, _ outcome: Outcome, at now: Duration) {
        close(lane, failed: !outcome.succeeded, at: now)
        precondition(lanes[lane].outcome == nil, "Recorder: lane '\(lanes[lane].spec.name)' finished twice")
        lanes[lane].outcome = outcome
        lanes[lane].finishedAt = now
        guard lanes[lane].spec.isDownload else { return }
        log.append(
            LogEntry(
                time: now,
                content: .finished(
                    lane: lanes[lane].spec.name, outcome, done: done, total: total
                )))
    }

    func progress(at now: Duration) -> ProgressSnapshot {
        let waiting = lanes.count { $0.spec.isDownload && $0.openKind == .waiting }
        return ProgressSnapshot(done: done, total: total, running: running, waiting: waiting, elapsed: now)
    }

    func report(at now: Duration) -> RecorderReport {
        let lanes = lanes.map { lane in
            RecorderReport.Lane(
                spec: lane.spec,
                segments: lane.segments.map { Segment(kind: $0.kind, start: $0.start, end: $0.end ?? now) },
                outcome: lane.outcome,
                finishedAt: lane.finishedAt
            )
        }
        return RecorderReport(
            lanes: lanes,
            wallTime: now,
            maxConcurrency: maxRunning,
            succeeded: lanes.count { $0.spec.isDownload && $0.outcome?.succeeded == true },
            downloads: total
        )
    }
}
