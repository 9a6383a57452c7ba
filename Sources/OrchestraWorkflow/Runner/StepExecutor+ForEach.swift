import Orchestra

extension StepExecutor {
    /// Sends one request per element of the list `reference` names, each with its own retries,
    /// timeout and expectations, reported as `STEP[INDEX]`. At most ``window`` elements are
    /// started at a time (each attempt still waits for a slot of the workflow's `limit` and its
    /// host's limit, and a backoff holds no slot), so memory stays flat however long the list.
    ///
    /// A failed element does not cancel the others: once every element has ended, the step
    /// fails naming how many failed and the first (by index). An empty list succeeds having
    /// sent nothing. Returns each capture as an array of the elements' values, in order.
    ///
    /// Cancellation: cancelling the step starts no more elements, cancels those in flight
    /// (reported cancelled) and throws `CancellationError` once they have ended, at once
    /// whatever the list's length: the elements never started are counted cancelled in
    /// ``StepReport/itemCounts`` but get no report of their own. A cancellation
    /// that arrives after every element has ended changes nothing: the step reports what its
    /// elements did.
    func fanOut(
        _ step: WorkflowStep, over reference: Template.Reference, values: TemplateValues
    ) async throws -> [String: JSONValue] {
        let list: JSONValue
        do {
            list = try values.value(of: reference)
        } catch {
            throw StepFailure("for_each: \(error)")
        }
        guard case .array(let elements) = list else {
            throw StepFailure("for_each: \(short: reference) is \(Self.kind(of: list)), not a list")
        }
        let total = elements.count
        let kept = keptCaptures(of: step)
        var outcome = FanOutOutcome(keepsAll: keepsItemReports, keeping: kept, count: total)
        var stateFailure: (any Error)?
        if let state {
            stateFailure = try await fanOutRecorded(
                step, list: list, elements: elements, values: values, state: state, into: &outcome)
        } else {
            emit(.progress(step: step.id, finished: 0, total: total, counts: outcome.counts))
            // The library's window: at most `window` elements started at once, each one's
            // outcome received as it ends. Cancelled, no element starts any more and those
            // running are cancelled, their outcomes still received: every element that started
            // is accounted for, and the others are counted at once, however long the list.
            let ends = (0..<total).completions(limit: window, whenCancelled: .deliverRunning) { index in
                await element(step, index: index, item: elements[index], values: values)
            }
            var finished = 0
            for await (index, ended) in ends {
                // An element never throws: it returns how it ended.
                guard case .success(let end) = ended else { continue }
                outcome.record(index, end.result, end.report)
                finished += 1
                emit(.progress(step: step.id, finished: finished, total: total, counts: outcome.counts))
            }
            // Cancelled before every element started: the rest are cancelled unsent, counted at
            // once without a report each (5,000,000 reports took 26 s to build, sort and redact
            // after a Ctrl-C).
            outcome.cancelUnstarted(total - finished)
        }
        report(outcome, of: step.id)
        if let stateFailure {
            throw StepFailure("--state: \(stateFailure); the elements not started were cancelled")
        }
        // Cancelled while elements were in flight: the step is cancelled. Cancelled only after
        // every element had ended, it reports what the elements did.
        if outcome.wasCancelled { throw CancellationError() }
        return try captures(of: step, from: outcome, kept: kept, total: total)
    }

    /// Writes what the elements (or pages) of the step `id` did into its report.
    func report(_ outcome: FanOutOutcome, of id: String) {
        records.withLock { records in
            records[id]?.items = outcome.items()
            records[id]?.itemCounts = outcome.counts
            records[id]?.attempts = outcome.attempts
            records[id]?.firstSent = outcome.firstSent
        }
    }

    /// The captures of a `for_each` step once its `total` elements have ended, each a list of
    /// the elements' values (those in `kept`).
    ///
    /// - Throws: ``StepFailure`` naming how many elements failed and the first (by index).
    func captures(
        of step: WorkflowStep, from outcome: FanOutOutcome, kept: Set<String>, total: Int
    ) throws -> [String: JSONValue] {
        if let first = outcome.firstFailure {
            throw StepFailure(
                "\(outcome.failures) of \(total) requests failed; first: \(step.id)[\(first.index)]: \(first.error)")
        }
        var captures: [String: JSONValue] = [:]
        for capture in step.captures where kept.contains(capture.name) {
            captures[capture.name] = .array(outcome.captured.map { $0[capture.name] ?? .null })
        }
        return captures
    }

    /// The captures of `step` whose elements' values are kept until the step ends: those a
    /// template of another step reads (`{{image.size}}`, the list of every element's value),
    /// and all of them when element reports are kept (they hold the values anyway). The
    /// others are freed as each element ends: nothing can read them, and kept to the end of
    /// the run they would hold every element's memory (BENCHMARKS.md#hostile-servers-and-files).
    func keptCaptures(of step: WorkflowStep) -> Set<String> {
        let declared = Set(step.captures.map(\.name))
        guard !keepsItemReports, !declared.isEmpty else { return declared }
        var read: Set<String> = []
        for other in workflow.steps where other.id != step.id {
            for reference in other.captureReferences where reference.namespace == step.id {
                read.insert(reference.name)
            }
        }
        return declared.intersection(read)
    }

    /// Elements started at once by a `for_each` step (``WorkflowLimits/forEachWindow``), so the
    /// limit stays busy while elements wait for backoffs, tokens or host slots.
    var window: Int { workflow.limits.forEachWindow }

    /// How one element of a `for_each` step ended: its captures or its error, and its report.
    struct ElementEnd: Sendable {
        var result: Result<[String: JSONValue], any Error>
        var report: StepReport?
    }

    /// Sends element `index` of `step` (`item`, with `{{item}}` and `{{index}}` set), with the
    /// step's retries, timeout and expectations, reported as `STEP[INDEX]`.
    func element(_ step: WorkflowStep, index: Int, item: JSONValue, values: TemplateValues) async -> ElementEnd {
        var values = values
        values.item = item
        values.index = index
        let id = "\(step.id)[\(index)]"
        let result: Result<[String: JSONValue], any Error>
        do {
            result = .success(
                try await tracked(step, id: id, item: index) {
                    try await perform(step, id: id, item: index, values: values)
                })
        } catch {
            result = .failure(error)
        }
        return ElementEnd(result: result, report: records.withLock { $0.removeValue(forKey: id) })
    }

    /// `an object`, `a string`, … for messages.
    static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "a list"
        case .object: "an object"
        }
    }
}

/// What the elements of a `for_each` step did, gathered as they end: counts, the first failure
/// by index, the captures it keeps (only those a later step reads, unless every element
/// report is kept) and element reports (all of them, or only those that did not succeed).
struct FanOutOutcome {
    let keepsAll: Bool
    private(set) var counts = StepReport.ItemCounts()
    private(set) var attempts = 0
    private(set) var firstSent: Duration?
    private(set) var failures = 0
    private(set) var wasCancelled = false
    private(set) var firstFailure: (index: Int, error: any Error)?
    private(set) var captured: [[String: JSONValue]]
    private var reports: [(index: Int, report: StepReport)] = []

    /// The names of the captures kept; the others are dropped as each element ends.
    let keeping: Set<String>

    init(keepsAll: Bool, keeping: Set<String>, count: Int) {
        self.keepsAll = keepsAll
        self.keeping = keeping
        captured = keeping.isEmpty ? [] : Array(repeating: [:], count: count)
    }

    /// Makes room for the captures of elements up to `count` (a list that grows as its pages
    /// arrive).
    mutating func grow(to count: Int) {
        guard !keeping.isEmpty, captured.count < count else { return }
        captured.append(contentsOf: repeatElement([:], count: count - captured.count))
    }

    mutating func record(_ index: Int, _ result: Result<[String: JSONValue], any Error>, _ report: StepReport?) {
        if let report {
            counts.add(report)
            attempts += report.attempts
            if let sent = report.firstSent { firstSent = min(firstSent ?? sent, sent) }
            if keepsAll || report.state != .succeeded { reports.append((index, report)) }
        }
        switch result {
        case .success(let values):
            if !captured.isEmpty { captured[index] = values.filter { keeping.contains($0.key) } }
        case .failure(is CancellationError):
            wasCancelled = true
        case .failure(let error):
            failures += 1
            if firstFailure.map({ index < $0.index }) ?? true { firstFailure = (index, error) }
        }
    }

    /// Counts `count` elements that were never started as cancelled, in constant time: they
    /// get no report of their own (``StepReport/items`` leaves them out).
    mutating func cancelUnstarted(_ count: Int) {
        guard count > 0 else { return }
        counts.total += count
        counts.cancelled += count
        wasCancelled = true
    }

    /// The element reports kept, in element order.
    func items() -> [StepReport] {
        reports.sorted { $0.index < $1.index }.map(\.report)
    }
}
