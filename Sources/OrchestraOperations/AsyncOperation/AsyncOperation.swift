import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

/// An `Operation` that stays executing until its work calls ``finish()``, so `addDependency`
/// and `maxConcurrentOperationCount` work with completion-handler and async APIs.
///
/// Subclass it, override ``execute()`` to start the work, and call ``finish()`` when the work
/// is done, on any thread:
///
/// ```swift
/// final class DownloadOperation: AsyncOperation, @unchecked Sendable {
///     let url: URL
///     init(url: URL) { self.url = url }
///     override func execute() {
///         legacyDownload(url) { _ in self.finish() }
///     }
/// }
/// ```
///
/// What it guarantees, on Darwin and on Linux (swift-corelibs-foundation):
/// - The `isExecuting` and `isFinished` notifications are sent around every change, outside
///   the state's lock, with the getters already returning the new value when the "did"
///   notification is sent (corelibs only acts on `didChangeValue(forKey:)` then).
/// - ``finish()`` is idempotent and thread-safe: a second call is ignored and reported to
///   ``diagnostics`` (as expected, not as a bug, after the operation was cancelled or timed out).
/// - Cancelled before it starts, it finishes without running ``execute()``. Cancelled while it
///   runs, ``executionCancelled()`` runs and, by default, the operation finishes at once:
///   never a cancelled operation that stays executing. Cancelled while ``execute()`` itself
///   runs, ``executionCancelled()`` waits for it to return, so the work it started (a task, a
///   request) is there to be stopped: never a cancellation lost to that race.
/// - With a ``timeout``, an operation still running when it expires is cancelled and finishes
///   with a `TimeoutError` (``error``, code `.timedOut`).
///
/// `Operation` subclasses are `@unchecked Sendable`: Foundation calls them from any thread.
/// Every mutable state here is behind the lock.
open class AsyncOperation: Operation, @unchecked Sendable {
    private let state = Locked(OperationStateMachine())
    private let settings = Locked(Settings())
    private let finished = AsyncEvent()

    private struct Settings {
        var diagnostics: DiagnosticsHandler = .standardError
        var timeout: Duration?
        var clock: any Clock<Duration> = ContinuousClock()
        var timer: Task<Void, Never>?
        var error: (any Error)?
        var finishHandlers: [@Sendable () -> Void] = []
        var hasFinished = false
    }

    override public init() {
        super.init()
    }

    /// Where a second ``finish()`` or `start()` is reported; standard error by default.
    public var diagnostics: DiagnosticsHandler {
        get { settings.withLock { $0.diagnostics } }
        set { settings.withLock { $0.diagnostics = newValue } }
    }

    /// How long the operation may execute before it is cancelled and finishes with a
    /// `TimeoutError`; none by default. Set it before the operation starts.
    public var timeout: Duration? {
        get { settings.withLock { $0.timeout } }
        set { settings.withLock { $0.timeout = newValue } }
    }

    /// The clock that measures ``timeout``; a `ContinuousClock` by default (tests inject a
    /// manual clock).
    public var clock: any Clock<Duration> {
        get { settings.withLock { $0.clock } }
        set { settings.withLock { $0.clock = newValue } }
    }

    /// Why the operation did not succeed, once it has finished: a `TimeoutError` if it timed
    /// out, what ``finish(throwing:)`` recorded, or `CancellationError` if it was cancelled;
    /// `nil` if it succeeded or has not finished.
    public var error: (any Error)? {
        settings.withLock { $0.error }
    }

    override open var isAsynchronous: Bool { true }
    override open var isExecuting: Bool { state.withLock { $0.isExecuting } }
    override open var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Starts the work: called by the queue, or by you for an operation outside a queue. Do not
    /// override it; override ``execute()``.
    override public final func start() {
        switch state.withLock({ $0.start(isCancelled: isCancelled) }) {
        case .reportDoubleStart:
            report(.doubleStart, "\(displayName) was started again after it had started; the call was ignored")
        case .finishWithoutExecuting:
            record(error: CancellationError())
            completeFinish(wasExecuting: false)
        case .execute:
            willChangeValue(forKey: "isExecuting")
            state.withLock { $0.didStart() }
            didChangeValue(forKey: "isExecuting")
            startTimer()
            execute()
            // Cancelled or timed out since it started: the work's handle is in place now.
            if state.withLock({ $0.executeReturned() }) { executionCancelled() }
        }
    }

    /// The work. Override it, start the work and call ``finish()`` when it is done (on any
    /// thread). The default finishes at once.
    open func execute() {
        finish()
    }

    /// Called once when the operation is cancelled or times out while it executes, on the
    /// thread that cancelled it; if that happened while ``execute()`` ran, on the thread that
    /// started it, once ``execute()`` has returned. The default calls ``finish()``; override it
    /// to stop the work (cancel the request) and, unless the work's own completion will finish
    /// the operation promptly, call `super` or ``finish()``.
    open func executionCancelled() {
        finish()
    }

    /// Marks the operation finished: its dependents may start and its queue slot is free.
    /// Thread-safe; a second call is ignored and reported to ``diagnostics``.
    public final func finish() {
        finish(error: nil)
    }

    /// Marks the operation finished with an error, readable from ``error``.
    public final func finish(throwing error: any Error) {
        finish(error: error)
    }

    override open func cancel() {
        super.cancel()
        stopRunningWork()
    }

    /// Waits until the operation has finished.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first (the operation is
    ///   not cancelled).
    public func waitUntilFinished() async throws {
        try await finished.wait()
    }

    // MARK: - Internals

    /// Finishes unless already finished. Only the call that wins records anything: a timeout
    /// that fired first, else `error`, else `commit` (a result operation's value), else
    /// `CancellationError` if the operation was cancelled.
    func finish(error: (any Error)?, commit: (() -> Void)? = nil) {
        let action = state.withLock { $0.finish() }
        switch action {
        case .reportDoubleFinish(let expected):
            report(
                .doubleFinish, "\(displayName) was finished again after it had finished; the call was ignored",
                expected: expected)
        case .finish(let wasExecuting):
            if let timeout = state.withLock({ $0.timeout }) {
                record(error: timeout)
            } else if let error {
                record(error: error)
            } else if let commit {
                commit()
            } else if isCancelled {
                record(error: CancellationError())
            }
            completeFinish(wasExecuting: wasExecuting)
        }
    }

    /// Whether the timeout fired while the operation executed.
    var isTimedOut: Bool {
        state.withLock { $0.timeout != nil }
    }

    /// Hook for subclasses in this module, called once before the `isFinished` notification.
    func willFinish() {}

    private func completeFinish(wasExecuting: Bool) {
        let timer = settings.withLock { settings -> Task<Void, Never>? in
            defer { settings.timer = nil }
            return settings.timer
        }
        timer?.cancel()
        willFinish()
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        state.withLock { $0.didFinish() }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
        finished.signal()
        let handlers = settings.withLock { settings in
            settings.hasFinished = true
            defer { settings.finishHandlers = [] }
            return settings.finishHandlers
        }
        for handler in handlers { handler() }
    }

    /// Calls `handler` once the operation has finished (at once if it has), on the thread that
    /// finished it; unlike `completionBlock`, any number of handlers can be set.
    func whenFinished(_ handler: @escaping @Sendable () -> Void) {
        let now = settings.withLock { settings -> Bool in
            if settings.hasFinished { return true }
            settings.finishHandlers.append(handler)
            return false
        }
        if now { handler() }
    }

    private func record(error: any Error) {
        settings.withLock { if $0.error == nil { $0.error = error } }
    }

    private func stopRunningWork() {
        if state.withLock({ $0.cancel() }) {
            executionCancelled()
        }
    }

    private func startTimer() {
        let (timeout, clock) = settings.withLock { ($0.timeout, $0.clock) }
        guard let timeout else { return }
        let subject = displayName
        // Unstructured on purpose: an Operation has no async scope to run the timer in. It is
        // cancelled when the operation finishes, and holds the operation only weakly.
        let timer = Task { [weak self] in
            do {
                // Not `clock.sleep`: the timer is cancelled far more often than it fires, and
                // a cancelled `Task.sleep` keeps its timer until the deadline.
                try await sleepReleasingOnCancel(for: timeout, clock: clock)
            } catch {
                return
            }
            self?.timeoutFired(TimeoutError(timeout: timeout, subject: subject))
        }
        settings.withLock { $0.timer = timer }
    }

    private func timeoutFired(_ error: TimeoutError) {
        switch state.withLock({ $0.timeoutFired(error) }) {
        case .none:
            break
        case .cancel:
            super.cancel()
        case .cancelAndStop:
            super.cancel()
            executionCancelled()
        }
    }

    private func report(_ kind: OrchestraDiagnostic.Kind, _ message: String, expected: Bool = false) {
        diagnostics.report(
            OrchestraDiagnostic(kind: kind, message: message, location: displayName, isExpected: expected))
    }

    var displayName: String {
        name.map { "operation \"\($0)\"" } ?? "\(type(of: self)) \(ObjectIdentifier(self))"
    }
}
