import Orchestra

/// The life of an ``AsyncOperation``, as a pure state machine: ready → starting → executing →
/// finishing → finished. The operation holds it behind a lock and sends the key-value
/// notifications around each change *outside* the lock, because Foundation reads the getters
/// from inside them.
///
/// `starting` and `finishing` are claims: the first caller of `start()` or `finish()` wins,
/// the getters still report the old value until the notifications are sent, and a second
/// caller sees the claim and is told to report itself.
struct OperationStateMachine: Sendable {
    enum Phase: Sendable {
        case ready
        case starting
        case executing
        case finishing
        case finished
    }

    enum StartAction: Equatable, Sendable {
        /// Send `isExecuting`, then run the work.
        case execute
        /// Cancelled before it started: finish without running the work.
        case finishWithoutExecuting
        /// Already started: ignore, and report the second start.
        case reportDoubleStart
    }

    enum FinishAction: Equatable, Sendable {
        /// Send `isExecuting` (if it was executing) and `isFinished`.
        case finish(wasExecuting: Bool)
        /// Already finished: ignore, and report it; `expected` when the operation was
        /// cancelled or timed out first, whose work often still completes afterwards.
        case reportDoubleFinish(expected: Bool)
    }

    private(set) var phase = Phase.ready
    /// Cancelled while executing, or timed out: a later finish from the work is expected.
    private(set) var stopRequested = false
    private(set) var timeout: TimeoutError?
    /// From `start()` until `execute()` has returned: the work's handle (a task, a request) may
    /// not be where `executionCancelled()` looks for it yet, so a stop requested meanwhile waits
    /// for `executeReturned()`.
    private var inExecute = false

    /// What `timeoutFired` asks of the operation.
    enum TimeoutAction: Equatable, Sendable {
        /// Not executing, or already timed out: nothing.
        case none
        /// Mark the operation cancelled and stop its work now.
        case cancelAndStop
        /// Mark the operation cancelled; its work is stopped when `execute()` returns.
        case cancel
    }

    var isExecuting: Bool { phase == .executing || phase == .finishing }
    var isFinished: Bool { phase == .finished }

    mutating func start(isCancelled: Bool) -> StartAction {
        guard phase == .ready else { return .reportDoubleStart }
        if isCancelled {
            phase = .finishing
            return .finishWithoutExecuting
        }
        phase = .starting
        inExecute = true
        return .execute
    }

    /// The `isExecuting` notification is on its way: the getter must now say so.
    mutating func didStart() {
        if phase == .starting { phase = .executing }
    }

    /// `execute()` returned: whether a cancel or timeout that came since `start()` must stop the
    /// work now (unless the work has finished already). No stop can have run before: each one
    /// requested while `inExecute` waited for this.
    mutating func executeReturned() -> Bool {
        inExecute = false
        return stopRequested && phase == .executing
    }

    mutating func finish() -> FinishAction {
        switch phase {
        case .ready:
            phase = .finishing
            return .finish(wasExecuting: false)
        case .starting, .executing:
            // `starting`: finished from inside `execute()` before `didStart`, which cannot
            // happen since `execute()` runs after it; kept total for safety.
            phase = .finishing
            return .finish(wasExecuting: true)
        case .finishing, .finished:
            return .reportDoubleFinish(expected: stopRequested)
        }
    }

    /// The notifications are on their way: the getters must now say finished.
    mutating func didFinish() {
        phase = .finished
    }

    /// `cancel()` was called: whether the operation must stop its running work now. While it
    /// is starting or `execute()` runs, not yet: `executeReturned()` says so once it has returned.
    mutating func cancel() -> Bool {
        guard phase == .starting || phase == .executing, !stopRequested else { return false }
        stopRequested = true
        return !inExecute
    }

    /// The timeout fired: what the operation must do (stop its running work now, or once
    /// `execute()` has returned).
    mutating func timeoutFired(_ error: TimeoutError) -> TimeoutAction {
        guard phase == .executing, timeout == nil else { return .none }
        timeout = error
        stopRequested = true
        return inExecute ? .cancel : .cancelAndStop
    }
}
