import Orchestra
import OrchestraPostgres
import OrchestraWorkflow

/// A coordinator's writes of its steps' figures (``WorkflowStepTally``) to its run, for
/// `orchestra status`: a write only when the figures changed since the last one that went
/// through, carrying only the steps that moved since. The writes while the run goes
/// (``keepRecording(every:clock:)``) and the last one at its end (``record()``) come one after
/// the other, never at once.
final class StepRecorder: Sendable {
    /// How often the figures are looked at while the run goes: what `orchestra status` shows of
    /// a run that is going on is at most this old.
    static let interval: Duration = .seconds(2)

    let tally: WorkflowStepTally
    let store: PostgresJobStore
    let runID: String
    /// The tally's version written last, and the figures then (`nil`: none written by this
    /// process, so the first write replaces the run's figures whole).
    private let written: Locked<(version: Int, figures: [DurableStepFigures]?)>

    /// A recorder that writes once the tally's version differs from `version` (`-1`: at
    /// once, for a new run; `0`: at the first news, for a run an earlier coordinator recorded).
    init(tally: WorkflowStepTally, store: PostgresJobStore, runID: String, from version: Int) {
        self.tally = tally
        self.store = store
        self.runID = runID
        written = Locked((version, nil))
    }

    /// Writes the figures if they changed since the last write. A write that fails is tried
    /// again at the next call (the figures are only for `orchestra status`: no request depends
    /// on them).
    func record() async {
        let (steps, version) = tally.figures
        let last = written.withLock { $0 }
        guard version != last.version else { return }
        let figures = Self.figures(steps)
        guard (try? await store.recordSteps(figures, of: runID, changedFrom: last.figures)) != nil else { return }
        written.withLock { $0 = (version, figures) }
    }

    /// ``record()`` every `interval`, until cancelled.
    func keepRecording<C: Clock<Duration>>(every interval: Duration = interval, clock: C = ContinuousClock()) async {
        while !Task.isCancelled {
            await record()
            do { try await clock.sleep(for: interval) } catch { return }
        }
    }

    /// The steps' figures as the store keeps them.
    static func figures(_ steps: [WorkflowStateSummary.Step]) -> [DurableStepFigures] {
        steps.map {
            DurableStepFigures(
                step: $0.id, forEach: $0.forEach, total: $0.total, succeeded: $0.succeeded, failed: $0.failed,
                maybeSent: $0.maybeSent, skipped: $0.skipped)
        }
    }
}
