import Foundation

/// When the coordinator of a distributed run says that no worker takes its requests: fed with
/// what the store shows at each look, it answers whether a note is due, without a clock or a
/// store of its own (``DistributedRun`` looks every few seconds and prints the note).
///
/// A request that waits for a worker is not an error: the run goes on waiting (workers may be
/// started later, or be restarting), and Ctrl-C still cancels it. So the note is not printed
/// at once, and it is repeated sparsely: after ``firstNote`` without a claim while requests
/// wait, then each time the wait has doubled, at most ``longestGap`` apart. Anything a worker
/// did since the last look (a request started, one ended) starts the count again.
///
/// ```swift
/// var watch = WorkerWatch()
/// if let waited = watch.observe(WorkerWatch.Look(waiting: 12, running: 0, ended: 0), at: .seconds(30)) {
///     print(WorkerWatch.note(waited: waited, waiting: 12, runID: "orders", schema: "orchestra"))
/// }
/// ```
struct WorkerWatch: Sendable {
    /// What the store shows of the run at one look.
    struct Look: Sendable, Hashable {
        /// Requests ready and not claimed by any worker.
        var waiting: Int
        /// Requests claimed by a worker and not ended.
        var running: Int
        /// Requests ended (succeeded, failed, cancelled).
        var ended: Int
    }

    /// The default wait before the first note: 30 s.
    static let defaultFirstNote: Duration = .seconds(30)
    /// The longest time between two notes while the wait goes on: 10 minutes.
    static let longestGap: Duration = .seconds(600)

    /// How long requests wait without a claim before the first note.
    let firstNote: Duration
    private var last = Look(waiting: 0, running: 0, ended: 0)
    /// When a worker was last seen doing something (or the watch started).
    private var lastClaim: Duration = .zero
    /// How long after `lastClaim` the next note is due.
    private var nextNote: Duration

    /// A watch started at time zero of the caller's clock.
    init(firstNote: Duration = Self.defaultFirstNote) {
        self.firstNote = max(firstNote, .milliseconds(1))
        nextNote = self.firstNote
    }

    /// Takes in the look at `now` (the time since the watch started) and returns how long
    /// requests have waited without a claim if a note is due now, else `nil`.
    mutating func observe(_ look: Look, at now: Duration) -> Duration? {
        defer { last = look }
        // Nothing waits, or a worker claimed or ended a request since the last look.
        if look.waiting == 0 || look.running != last.running || look.ended != last.ended {
            lastClaim = now
            nextNote = firstNote
            return nil
        }
        let waited = now - lastClaim
        guard waited >= nextNote else { return nil }
        nextNote = waited + min(waited, Self.longestGap)
        return waited
    }

    /// The note: `waiting for a worker: none has claimed a request for 30 s; 12 requests of
    /// run 'orders' wait: start 'orchestra worker --state postgres://… --schema orchestra'
    /// against the same store`.
    static func note(waited: Duration, waiting: Int, runID: String, schema: String) -> String {
        "waiting for a worker: none has claimed a request for \(describe(waited)); \(Format.count(waiting, "request")) of run '\(runID)' \(waiting == 1 ? "waits" : "wait"): start 'orchestra worker --state postgres://… --schema \(schema)' against the same store (Ctrl-C cancels the run)"
    }

    /// `30 s` under two minutes, then whole minutes: `4 min`.
    static func describe(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        return seconds < 120 ? "\(seconds) s" : "\(seconds / 60) min"
    }

    /// ``defaultFirstNote``, or the whole number of seconds (1 to 3600) in the environment
    /// variable `ORCHESTRA_WORKER_NOTE_AFTER` (for tests; any other value is ignored).
    static func firstNote(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration {
        guard let text = environment["ORCHESTRA_WORKER_NOTE_AFTER"], let seconds = Int(text),
            (1...3600).contains(seconds)
        else { return defaultFirstNote }
        return .seconds(seconds)
    }
}
