/// One bar of a trace: a job (a download, a request, a workflow step) on its lane.
struct TraceSpan: Sendable {
    /// The row it is drawn on; spans of one lane must not overlap.
    var lane: String
    var name: String
    /// Offsets from the start of the run.
    var start: Duration
    var end: Duration
    /// Chrome's `cat`: what kind of job (`"download"`, `"refresh"`, `"step"`).
    var category: String
    /// Shown on hover: status, attempts, outcome…
    var args: [(key: String, value: String)]
    /// Stretches of the span spent waiting (for a permit, a slot, a refresh): drawn pale on the
    /// HTML page; the Chrome event still covers the whole job.
    var waits: [(start: Duration, end: Duration)]

    init(
        lane: String, name: String, start: Duration, end: Duration, category: String,
        args: [(key: String, value: String)] = [], waits: [(start: Duration, end: Duration)] = []
    ) {
        self.lane = lane
        self.name = name
        self.start = start
        self.end = max(start, end)
        self.category = category
        self.args = args
        self.waits = waits
    }
}
