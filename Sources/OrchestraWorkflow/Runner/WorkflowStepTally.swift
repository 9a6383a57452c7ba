import Orchestra

/// Each step's figures as a run goes, from the runner's events: what a state file's records
/// give `orchestra status` (``WorkflowStateSummary/Step``), for a run whose requests are
/// recorded elsewhere (handed to durable workers, whose jobs say whether a request got a
/// response but not whether its step's expectations held).
///
/// A `for_each` step's figures move with each element that ends; a step's own request counts
/// once the step has ended. A step skipped by a `when:` (its own or a dependency's) has nothing
/// to send; a request not sent otherwise (its dependency failed, cancelled) counts nowhere: it
/// is still to be sent.
package final class WorkflowStepTally: Sendable {
    private struct State {
        var steps: [WorkflowStateSummary.Step]
        var positions: [String: Int]
        /// Moves on with every change, so that a reader can tell whether there is news.
        var version = 0
    }

    private let state: Locked<State>

    /// The steps of `workflow`, in file order, none of their requests ended yet.
    package init(workflow: Workflow) {
        let steps = workflow.steps.map { WorkflowStateSummary.Step(id: $0.id, forEach: $0.forEach != nil) }
        state = Locked(
            State(
                steps: steps,
                positions: Dictionary(steps.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })))
    }

    /// The steps' figures now, and the version of the tally they are (it changes with them).
    package var figures: (steps: [WorkflowStateSummary.Step], version: Int) {
        state.withLock { ($0.steps, $0.version) }
    }

    /// Takes in what `event` says of its step.
    package func observe(_ event: WorkflowEvent) {
        state.withLock { state in
            switch event {
            case .started:
                return
            case .progress(let id, _, let total, let counts):
                guard let position = state.positions[id], state.steps[position].forEach else { return }
                state.steps[position].total = total
                state.steps[position].take(counts)
            case .finished(let report):
                guard let position = state.positions[report.id] else { return }
                if report.skippedByCondition {
                    state.steps[position].skipped = true
                } else if state.steps[position].forEach {
                    // A list that could not be read has no counts: its length stays unknown.
                    guard let counts = report.itemCounts else { return }
                    state.steps[position].total = counts.total
                    state.steps[position].take(counts)
                } else {
                    var step = WorkflowStateSummary.Step(id: report.id, forEach: false)
                    switch report.state {
                    case .succeeded: step.succeeded = 1
                    case .failed where report.maybeSent: step.maybeSent = 1
                    case .failed: step.failed = 1
                    case .skipped, .cancelled: break
                    }
                    state.steps[position] = step
                }
            }
            state.version += 1
        }
    }
}

extension WorkflowStateSummary.Step {
    /// A step of the workflow, none of whose requests has ended.
    package init(id: String, forEach: Bool) {
        self.id = id
        self.forEach = forEach
    }

    /// Takes a `for_each` step's counts: those that may have been sent apart from the failed.
    mutating func take(_ counts: StepReport.ItemCounts) {
        succeeded = counts.succeeded
        failed = counts.failed - counts.maybeSent
        maybeSent = counts.maybeSent
    }
}
