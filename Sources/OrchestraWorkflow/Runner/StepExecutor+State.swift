import HTTPTypes

extension StepExecutor {
    /// What a run with a `--state` file does with the request of `step` reported as `id`
    /// whose record is `record`: `nil` to send it; its recorded captures if it succeeded in an
    /// earlier run (the report says it was reused).
    ///
    /// - Throws: ``StepFailure`` "may have been sent" for a request an earlier run stopped with
    ///   in flight, when it is not safe to send twice.
    func resume(_ step: WorkflowStep, id: String, record: StateRecord?) throws -> [String: JSONValue]? {
        switch decision(step, record: record) {
        case .send:
            return nil
        case .reuse(let record):
            update(id) { $0.reuse(record) }
            return record.captures
        case .uncertain(let record):
            let message = records.withLock { records in
                records[id]?.markMaybeSent(record)
                return records[id]?.error
            }
            throw StepFailure(message ?? "")
        }
    }

    /// The decision for `step`'s request with `record`. A succeeded record without every
    /// capture the step now declares (a file changed under `--force`), or a paginate step's
    /// without its `items` (left out for holding a secret), is sent again.
    func decision(_ step: WorkflowStep, record: StateRecord?) -> StateRecord.Decision {
        let decision = StateRecord.decision(for: record, resends: step.resendsOnResume || resendsUncertain)
        if case .reuse(let record) = decision {
            let items = step.paginate?.items == nil ? [] : [Pagination.itemsName]
            guard (step.captures.map(\.name) + items).allSatisfy({ record.captures[$0] != nil }) else { return .send }
        }
        return decision
    }

    /// Queues the outcome of request `item` of `step` (reported as `id`) in the `--state`
    /// file: succeeded with `captures`, skipped by a `when:`, or failed. A request reused or
    /// reported "may have been sent" keeps its record; a cancelled one keeps its "sending"
    /// record only if it was sent.
    ///
    /// The file holds what the run shows, no more: the URL and the error with the secrets
    /// masked (the URL's user information is masked already), and only the captures a resume
    /// may send that hold no secret (``storedCaptures(_:)``).
    func recordOutcome(_ step: WorkflowStep, id: String, item: Int, captures: [String: JSONValue]?) {
        guard let state, let report = records.withLock({ $0[id] }), !report.recorded, !report.maybeSent else {
            return
        }
        let redactor = workflow.redactor
        var record = StateRecord(
            state: .failed, status: report.status, attempts: report.attempts, url: redactor.redact(report.url),
            error: report.error.map(redactor.redact), run: state.run)
        if let captures {
            record.state = .succeeded
            record.captures = storedCaptures(captures)
        } else if report.skippedByCondition {
            record.state = .skipped
        } else if report.state == .cancelled {
            // Sent, or about to be: its "sending" record stays. Never sent: nothing to keep.
            guard report.intentRecorded, report.attempts == 0 else { return }
            record.error = "cancelled before it was sent"
        }
        state.record(step: step.id, item: item, record)
    }

    /// The captures of a succeeded request as the `--state` file keeps them: those whose value
    /// holds a secret of the run (a `secrets:` value, a token or password the run learned, in
    /// any form the redactor finds) are left out. A resume needs a capture's value to send the
    /// steps that use it, and a masked value would send `***`; so a record without one of its
    /// step's captures is not reused (``decision(_:record:)``): the step is sent again to read
    /// it, as it was on the first run.
    func storedCaptures(_ captures: [String: JSONValue]) -> [String: JSONValue] {
        let redactor = workflow.redactor
        guard !redactor.isEmpty else { return captures }
        return captures.filter { !redactor.containsSecret(in: $0.value.text) }
    }

    /// With a `--state` file, what runs once a request has its slot, before its first attempt
    /// goes out: it refuses to send once the file could not be written (a full disk: what
    /// would be sent could not be recorded, and a resume would send it again), and, for a
    /// request that is not safe to send twice, records it as being sent (committed). `nil`
    /// without a state file.
    func intent(
        for step: WorkflowStep, id: String, item: Int, url: String
    ) -> (@Sendable (HTTPRequest) async throws -> Void)? {
        guard let state else { return nil }
        guard !step.resendsOnResume else {
            return { _ in
                if let failure = state.failure { throw StepFailure("--state: \(failure); not sent") }
            }
        }
        return { _ in
            guard records.withLock({ $0[id].map { !$0.intentRecorded } ?? true }) else { return }
            do {
                try await state.intent(step: step.id, item: item, url: workflow.redactor.redact(url))
            } catch let error as WorkflowStateError {
                throw StepFailure("--state: \(error); not sent")
            }
            update(id) { $0.intentRecorded = true }
        }
    }

    /// The report of element `index` of `step` that is not sent because of its record: reused,
    /// or "may have been sent".
    func elementReport(_ step: WorkflowStep, index: Int, record: StateRecord, reused: Bool) -> StepReport {
        var report = StepReport(
            id: "\(step.id)[\(index)]", state: .failed, method: step.request.method.rawValue, url: record.url)
        if reused {
            report.reuse(record)
            report.captures = step.captures.map { JSONValue.Member($0.name, record.captures[$0.name] ?? .null) }
        } else {
            report.markMaybeSent(record)
        }
        return report
    }
}

extension StepReport {
    /// Marks a report as reused from `record`: succeeded in an earlier run, not sent by this one.
    mutating func reuse(_ record: StateRecord) {
        state = .succeeded
        recorded = true
        url = record.url
        status = record.status
        attempts = 0
    }

    /// Marks a report as not sent because it may have been: in flight when an earlier run
    /// (`record`'s) stopped, and not safe to send twice.
    mutating func markMaybeSent(_ record: StateRecord) {
        url = record.url
        maybeSent = true
        error = StateRecord.uncertainMessage(method: method, run: record.run)
    }
}

/// Reads the records of a `for_each` step's elements in index order, a page at a time, so
/// that memory stays flat however long the list.
struct StateRecordCursor {
    let state: WorkflowState
    let step: String
    private var page: [(item: Int, record: StateRecord)] = []
    private var position = 0
    private var exhausted = false
    static let pageSize = 512

    init(state: WorkflowState, step: String) {
        self.state = state
        self.step = step
    }

    /// The record of element `index`; indexes must be asked in increasing order.
    mutating func record(at index: Int) async throws -> StateRecord? {
        while true {
            while position < page.count, page[position].item < index { position += 1 }
            if position < page.count { return page[position].item == index ? page[position].record : nil }
            if exhausted { return nil }
            page = try await state.records(step: step, from: index, limit: Self.pageSize)
            position = 0
            exhausted = page.count < Self.pageSize
        }
    }
}

extension StepExecutor {
    /// ``fanOut(_:over:values:)`` with a `--state` file: each element's record is read first,
    /// in index order, and an element it settles (reused, or "may have been sent") ends at
    /// once, unsent; at most ``window`` elements are started at a time. This window of its own
    /// goes with the state file (issue 33); without one, `fanOut` uses the library's.
    ///
    /// - Returns: The state file's failure that stopped the elements from starting, if any.
    func fanOutRecorded(
        _ step: WorkflowStep, list: JSONValue, elements: JSONArray, values: TemplateValues, state: WorkflowState,
        into outcome: inout FanOutOutcome
    ) async throws -> (any Error)? {
        let total = elements.count
        var cursor: StateRecordCursor?
        do {
            try await state.prepareList(step: step.id, count: total, list: list.text)
        } catch let error as WorkflowStateError {
            throw StepFailure("--state: \(error)")
        }
        cursor = StateRecordCursor(state: state, step: step.id)
        emit(.progress(step: step.id, finished: 0, total: total, counts: outcome.counts))
        var stateFailure: (any Error)?
        /// An element's index, how it ended, and its report.
        typealias Ended = (Int, Result<[String: JSONValue], any Error>, StepReport?)
        typealias Group = TaskGroup<Ended>
        await withTaskGroup(of: Ended.self) { group in
            var next = 0
            var running = 0
            var finished = 0
            func start(_ index: Int, in group: inout Group) {
                let item = elements[index]
                group.addTask {
                    let end = await element(step, index: index, item: item, values: values)
                    return (index, end.result, end.report)
                }
            }
            /// Starts elements until `window` are running; an element its record settles (reused,
            /// or "may have been sent") ends at once, unsent.
            func fill(_ group: inout Group) async {
                while next < total, running < window, !Task.isCancelled, stateFailure == nil {
                    // The file could not be written (a full disk): nothing more starts, those
                    // running end and are reported.
                    if let failure = state.failure {
                        stateFailure = failure
                        return
                    }
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
                    emit(.progress(step: step.id, finished: finished, total: total, counts: outcome.counts))
                }
            }
            await fill(&group)
            for await (index, result, report) in group {
                outcome.record(index, result, report)
                finished += 1
                running -= 1
                emit(.progress(step: step.id, finished: finished, total: total, counts: outcome.counts))
                await fill(&group)
            }
            // Cancelled (or the state file failed) before every element started: the rest are
            // cancelled unsent, counted at once without a report each (5,000,000 reports took
            // 26 s to build, sort and redact after a Ctrl-C).
            outcome.cancelUnstarted(total - next)
        }
        return stateFailure
    }
}
