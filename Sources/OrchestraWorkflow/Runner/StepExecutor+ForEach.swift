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
        var cursor: StateRecordCursor?
        if let state {
            do {
                try await state.prepareList(step: step.id, count: total, list: list.text)
            } catch let error as WorkflowStateError {
                throw StepFailure("--state: \(error)")
            }
            cursor = StateRecordCursor(state: state, step: step.id)
        }
        emit(.progress(step: step.id, finished: 0, total: total))
        let kept = keptCaptures(of: step)
        var outcome = FanOutOutcome(keepsAll: keepsItemReports, keeping: kept, count: total)
        var stateFailure: (any Error)?
        /// An element's index, how it ended, and its report.
        typealias Ended = (Int, Result<[String: JSONValue], any Error>, StepReport?)
        typealias Group = TaskGroup<Ended>
        await withTaskGroup(of: Ended.self) { group in
            var next = 0
            var running = 0
            var finished = 0
            func start(_ index: Int, in group: inout Group) {
                var elementValues = values
                elementValues.item = elements[index]
                elementValues.index = index
                group.addTask {
                    let id = "\(step.id)[\(index)]"
                    let result: Result<[String: JSONValue], any Error>
                    do {
                        result = .success(
                            try await tracked(step, id: id, item: index) {
                                try await perform(step, id: id, item: index, values: elementValues)
                            })
                    } catch {
                        result = .failure(error)
                    }
                    return (index, result, records.withLock { $0.removeValue(forKey: id) })
                }
            }
            /// Starts elements until `window` are running; an element its record settles (reused,
            /// or "may have been sent") ends at once, unsent.
            func fill(_ group: inout Group) async {
                while next < total, running < window, !Task.isCancelled, stateFailure == nil {
                    let index = next
                    var decision = StateRecord.Decision.send
                    if cursor != nil {
                        do {
                            decision = self.decision(step, record: try await cursor!.record(at: index))
                        } catch {
                            stateFailure = error
                            return
                        }
                    }
                    next += 1
                    switch decision {
                    case .send:
                        start(index, in: &group)
                        running += 1
                        continue
                    case .reuse(let record):
                        outcome.record(
                            index, .success(record.captures),
                            elementReport(step, index: index, record: record, reused: true))
                    case .uncertain(let record):
                        let report = elementReport(step, index: index, record: record, reused: false)
                        outcome.record(index, .failure(StepFailure(report.error ?? "")), report)
                    }
                    finished += 1
                    emit(.progress(step: step.id, finished: finished, total: total))
                }
            }
            await fill(&group)
            for await (index, result, report) in group {
                outcome.record(index, result, report)
                finished += 1
                running -= 1
                emit(.progress(step: step.id, finished: finished, total: total))
                await fill(&group)
            }
            // Cancelled (or the state file failed) before every element started: the rest are
            // cancelled unsent, counted at once without a report each (5,000,000 reports took
            // 26 s to build, sort and redact after a Ctrl-C).
            outcome.cancelUnstarted(total - next)
        }
        records.withLock { records in
            records[step.id]?.items = outcome.items()
            records[step.id]?.itemCounts = outcome.counts
            records[step.id]?.attempts = outcome.attempts
            records[step.id]?.firstSent = outcome.firstSent
        }
        if let stateFailure {
            throw StepFailure("--state: \(stateFailure); the elements not started were cancelled")
        }
        // Cancelled while elements were in flight: the step is cancelled. Cancelled only after
        // every element had ended, it reports what the elements did.
        if outcome.wasCancelled { throw CancellationError() }
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
