import OrchestraHTTP

/// How one step of a run ended: what was sent, what came back, when, and why it failed.
package struct StepReport: Sendable, Hashable {
    /// How the elements of a `for_each` step ended.
    package struct ItemCounts: Sendable, Hashable {
        /// Elements in the list.
        package var total = 0
        /// Elements whose request was sent at least once.
        package var sent = 0
        package var succeeded = 0
        package var failed = 0
        package var cancelled = 0
        /// Failed elements (counted in ``failed`` too) not sent because an earlier run, or a
        /// worker that stopped, may have sent them.
        package var maybeSent = 0
        /// Elements not sent because the `--state` file records them as succeeded.
        package var recorded = 0

        package init() {}

        mutating func add(_ item: StepReport) {
            total += 1
            if item.attempts > 0 { sent += 1 }
            if item.recorded { recorded += 1 }
            switch item.state {
            case .succeeded: succeeded += 1
            case .failed:
                failed += 1
                if item.maybeSent { maybeSent += 1 }
            case .cancelled: cancelled += 1
            case .skipped: break
            }
        }
    }

    /// How a step ended.
    package enum State: String, Sendable, Hashable {
        case succeeded, failed, skipped, cancelled
    }

    package var id: String
    package var state: State
    /// The method sent (or that would have been).
    package var method: String
    /// The final URL, templates substituted; the URL as written if the step was never sent.
    /// For a `for_each` step: the URL with its variables substituted and `{{item…}}` left as
    /// written (each element's report has its own URL).
    package var url: String
    /// The status of the last response, if one came.
    package var status: Int?
    /// Attempts made: 1 plus the retries (a redirect followed is not an attempt of its own);
    /// 0 if never sent.
    package var attempts: Int
    /// When the step started (its request rendered), from the run's start.
    package var started: Duration?
    /// When its first attempt was sent (after any wait for a host slot or a token).
    package var firstSent: Duration?
    /// When its last attempt was sent.
    package var attemptSent: Duration?
    /// When it ended: for a request, when its last attempt ended (taken while the attempt
    /// still held its slot).
    package var ended: Duration?
    /// The redirects its request followed, in order (for a `for_each` step, each element
    /// lists its own).
    package var redirects: [HTTPRedirect] = []
    /// Why it failed, was skipped or was cancelled.
    package var error: String?
    /// For a skipped or cancelled step: the step whose failure caused it.
    package var cause: String?
    /// The values captured, in the order the step defines them (for a `for_each` step, each
    /// an array with one value per element). A runner that does not keep item reports keeps
    /// a `for_each` step's capture only if another step's template reads it: the others are
    /// freed as each element ends, and are `null` here.
    package var captures: [JSONValue.Member]
    /// The result of every check of the step's `assert:` list, in order (empty when it has
    /// none, or when the response was not checked: a status it does not expect, an error).
    /// For a `for_each` step, each element's report has its own.
    package var assertions: [AssertionResult] = []
    /// For a `for_each` step: one report per element, in element order, with ids `STEP[0]`,
    /// `STEP[1]`… (empty if the list was empty or never read); `nil` for other steps. The
    /// step's ``attempts`` is then their sum, its ``firstSent`` the earliest, its ``status``
    /// `nil`. A runner that does not keep item reports lists only the elements that did not
    /// succeed (``itemCounts`` has the totals either way). Elements a cancellation kept from
    /// starting are never listed: ``itemCounts`` counts them cancelled.
    package var items: [StepReport]?
    /// For a `for_each` step whose list was read: how its elements ended.
    package var itemCounts: ItemCounts?
    /// Whether the step (or element) was not sent because the `--state` file records it as
    /// succeeded in an earlier run: its status, URL and captures are the recorded ones.
    package var recorded = false
    /// Whether it failed as "may have been sent": an earlier run with the `--state` file
    /// stopped while it was in flight, and it is not safe to send twice.
    package var maybeSent = false
    /// `save_to:`: where the body was saved, its size and SHA-256.
    package var saved: SavedBody?
    /// The size of a body that was counted and dropped, not held (nothing read it).
    package var bodyBytes: Int?
    /// A remark on how the step ended that is not an error: a `paginate:` step that stopped at
    /// its `max_pages` with pages left.
    package var note: String?
    /// `until:`: the last attempts of its poll (at most ``StepPoll/reportedAttempts``), and
    /// how many there were.
    package var polls: [PollAttempt] = []
    package var pollCount = 0
    /// Whether it was skipped by a `when:` (its own or a dependency's): not a failure.
    package var skippedByCondition = false
    /// Whether its "sending" record was committed to the `--state` file before it was sent.
    var intentRecorded = false

    package init(
        id: String, state: State, method: String, url: String, status: Int? = nil, attempts: Int = 0,
        started: Duration? = nil, firstSent: Duration? = nil, ended: Duration? = nil, error: String? = nil,
        cause: String? = nil, captures: [JSONValue.Member] = [], items: [StepReport]? = nil
    ) {
        self.id = id
        self.state = state
        self.method = method
        self.url = url
        self.status = status
        self.attempts = attempts
        self.started = started
        self.firstSent = firstSent
        self.ended = ended
        self.error = error
        self.cause = cause
        self.captures = captures
        self.items = items
    }

    /// From the first send to the end, if it was sent.
    package var duration: Duration? {
        guard let from = firstSent ?? started, let ended else { return nil }
        return ended - from
    }
}

/// Something that happened during a run, delivered as it happens.
package enum WorkflowEvent: Sendable {
    /// A step started (its dependencies succeeded).
    case started(step: String)
    /// A step ended, however it ended.
    case finished(StepReport)
    /// How far a `for_each` step is: `finished` of its `total` elements have ended (sent once
    /// with 0 when the step knows its list, then once per element), `counts` how.
    case progress(step: String, finished: Int, total: Int, counts: StepReport.ItemCounts)
}

/// Every step's report, in file order, and the run's totals.
/// A change a server made to its host's pace, and when, from the run's start.
package struct RateEventRecord: Sendable {
    package var at: Duration
    package var event: HTTPRateEvent

    package init(at: Duration, event: HTTPRateEvent) {
        self.at = at
        self.event = event
    }
}

/// A response body streamed to a file (`save_to:`).
package struct SavedBody: Sendable, Hashable {
    /// The file, as the step's `save_to` named it.
    package var path: String
    package var bytes: Int
    /// Lower-case hex.
    package var sha256: String

    package init(path: String, bytes: Int, sha256: String) {
        self.path = path
        self.bytes = bytes
        self.sha256 = sha256
    }
}

package struct WorkflowReport: Sendable {
    package var workflow: String?
    package var steps: [StepReport]
    /// From the run's start to its last step's end.
    package var duration: Duration
    /// Logins and refreshes the auth block made.
    package var logins: Int
    package var refreshes: Int
    /// Each host's requests sent, configured and effective rate, 429s and pauses
    /// (`HTTPCoordinator.hostRates`), by host.
    package var hosts: [HTTPHostRate] = []
    /// The changes the servers made to their hosts' pace, as they happened (at most
    /// ``maximumRateEvents``; the rest are counted in ``droppedRateEvents``).
    package var rateEvents: [RateEventRecord] = []
    package var droppedRateEvents = 0
    /// The most rate events a report keeps.
    package static let maximumRateEvents = 100

    package init(workflow: String?, steps: [StepReport], duration: Duration, logins: Int = 0, refreshes: Int = 0) {
        self.workflow = workflow
        self.steps = steps
        self.duration = duration
        self.logins = logins
        self.refreshes = refreshes
    }

    package func count(_ state: StepReport.State) -> Int {
        steps.count { $0.state == state }
    }

    /// Whether every step succeeded or was skipped by a `when:` (the command's exit status 0).
    package var allSucceeded: Bool {
        steps.allSatisfy { $0.state == .succeeded || $0.skippedByCondition }
    }

    /// The report of step `id`.
    package subscript(id: String) -> StepReport? {
        steps.first { $0.id == id }
    }
}

/// How a data-driven run went (``WorkflowRunner/run(rows:parallel:clock:onRow:)``): a report
/// per row, and the totals.
package struct DataRunReport: Sendable {
    /// One row's run.
    package struct Row: Sendable {
        /// 0-based, in file order.
        package var index: Int
        /// The row's values (`{{data.COLUMN}}`).
        package var data: [String: String]
        /// When the row started, from the start of the whole run; `nil` if it never started.
        package var started: Duration?
        /// Its steps (times from the row's start).
        package var report: WorkflowReport

        package init(index: Int, data: [String: String], started: Duration?, report: WorkflowReport) {
            self.index = index
            self.data = data
            self.started = started
            self.report = report
        }
    }

    package var rows: [Row]
    /// From the start to the last row's end.
    package var duration: Duration
    /// Logins and refreshes the auth block made, for every row together.
    package var logins: Int
    package var refreshes: Int
    /// Each host's figures and the servers' pace changes over every row, as in
    /// ``WorkflowReport/hosts`` and ``WorkflowReport/rateEvents``.
    package var hosts: [HTTPHostRate] = []
    package var rateEvents: [RateEventRecord] = []

    package init(rows: [Row], duration: Duration, logins: Int = 0, refreshes: Int = 0) {
        self.rows = rows
        self.duration = duration
        self.logins = logins
        self.refreshes = refreshes
    }

    /// Whether every step of every row succeeded.
    package var allSucceeded: Bool { rows.allSatisfy(\.report.allSucceeded) }

    /// How many rows had every step succeed.
    package var succeededRows: Int { rows.count { $0.report.allSucceeded } }

    /// How many rows had a step fail (a failed request, status or assertion).
    package var failedRows: Int { rows.count { $0.started != nil && $0.report.count(.failed) > 0 } }

    /// How many rows started and were cancelled (Ctrl-C) before every step succeeded, none
    /// of their steps having failed.
    package var cancelledRows: Int {
        rows.count { $0.started != nil && !$0.report.allSucceeded && $0.report.count(.failed) == 0 }
    }

    /// How many rows never started: the run was cancelled first. They are neither failed nor
    /// cancelled: nothing of theirs ran.
    package var notStartedRows: Int { rows.count { $0.started == nil } }
}
