/// The completion handler that ``withCallback(isolation:diagnostics:onCancel:fileID:line:_:)``
/// gives to legacy code. Call it exactly once.
///
/// - A second call is ignored and reported to the call's ``DiagnosticsHandler``.
/// - A call after the awaiting task was cancelled is ignored and reported as late.
/// - If every reference to it is released without a call, the await ends with
///   ``CallbackError/abandoned`` instead of hanging.
///
/// It is safe to call from any thread.
public final class Completion<Value: Sendable>: Sendable {
    private let storage: Locked<CallbackStateMachine<Value>>
    private let diagnostics: DiagnosticsHandler
    private let location: String

    init(storage: Locked<CallbackStateMachine<Value>>, diagnostics: DiagnosticsHandler, location: String) {
        self.storage = storage
        self.diagnostics = diagnostics
        self.location = location
    }

    deinit {
        storage.withLock { $0.abandon() }?.resume(
            throwing: CallbackError(
                code: .abandoned,
                message: "withCallback at \(location): the completion handler was released without being called"
            ))
    }

    /// Completes the call with `result`.
    public func callAsFunction(_ result: Result<Value, any Error>) {
        switch storage.withLock({ $0.complete() }) {
        case .resume(let continuation):
            continuation.resume(with: result)
        case .reportDouble:
            diagnostics.report(
                OrchestraDiagnostic(
                    kind: .doubleCompletion,
                    message: "the completion handler was called again with \(describe(result)); the call was ignored",
                    location: location
                ))
        case .reportLate(let expected):
            let why =
                expected
                ? "; expected, since the legacy work was asked to cancel"
                : "; nothing had asked the legacy work to cancel (pass onCancel:), so it ran to the end unobserved"
            diagnostics.report(
                OrchestraDiagnostic(
                    kind: .lateCompletion,
                    message:
                        "the completion handler was called with \(describe(result)) after the awaiting task was cancelled; the call was ignored\(why)",
                    location: location,
                    isExpected: expected
                ))
        }
    }

    /// Completes the call with a value.
    public func resume(returning value: Value) {
        self(.success(value))
    }

    /// Completes the call with an error.
    public func resume(throwing error: any Error) {
        self(.failure(error))
    }

    /// Registers work to do if the awaiting task is cancelled, typically cancelling the legacy
    /// request: `completion.onCancel { dataTask.cancel() }`. Runs `handler` at once if the
    /// task is already cancelled. Do not capture the completion itself in `handler`.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        if storage.withLock({ $0.addCancelHandler(handler) }) { handler() }
    }

    private func describe(_ result: Result<Value, any Error>) -> String {
        switch result {
        case .success: "a value"
        case .failure(let error): "error \(error)"
        }
    }
}

extension Completion where Value == Void {
    /// Completes a call that returns nothing.
    public func resume() {
        self(.success(()))
    }
}

/// Awaits a completion-handler API, with exactly-once, abandonment and cancellation
/// guarantees.
///
/// ```swift
/// let image = try await withCallback { completion in
///     manager.get(url, success: { completion.resume(returning: $0) },
///                      failure: { completion.resume(throwing: $0) })
/// }
/// ```
///
/// - `body` runs at once, in the caller's isolation, and receives a ``Completion``.
/// - The await ends with the first call of the completion. Later calls are ignored and reported
///   to `diagnostics` as ``OrchestraDiagnostic/Kind/doubleCompletion``.
/// - If the legacy code releases the completion without calling it, the await ends with
///   ``CallbackError/abandoned`` (a hand-written `dispatch_group_leave` that never comes hangs
///   forever).
/// - If `body` throws, the await ends with that error.
///
/// Cancellation: if the task is already cancelled, `body` is not called and
/// `CancellationError` is thrown. If it is cancelled while waiting, the await ends at once
/// with `CancellationError`, `onCancel` and the handlers given to ``Completion/onCancel(_:)``
/// run, and a completion that arrives later is reported as
/// ``OrchestraDiagnostic/Kind/lateCompletion``, marked ``OrchestraDiagnostic/isExpected`` when a
/// cancellation handler had asked the legacy work to stop (URLSession, for one, then calls back
/// with a "cancelled" error), so the default handler stays quiet about it.
///
/// - Parameters:
///   - isolation: Where `body` runs and the call returns; the caller's actor by default.
///   - diagnostics: Where misuse is reported; `DiagnosticsHandler.current` by default.
///   - onCancel: Cancels the legacy work when the awaiting task is cancelled.
///   - fileID: The call site, named in diagnostics and errors; leave the default.
///   - line: The call site's line; leave the default.
///   - body: Starts the legacy work and arranges for the completion to be called.
public func withCallback<Value: Sendable>(
    isolation: isolated (any Actor)? = #isolation,
    diagnostics: DiagnosticsHandler? = nil,
    onCancel: (@Sendable () -> Void)? = nil,
    fileID: String = #fileID,
    line: Int = #line,
    _ body: (Completion<Value>) throws -> Void
) async throws -> Value {
    let storage = Locked(CallbackStateMachine<Value>())
    if let onCancel { _ = storage.withLock { $0.addCancelHandler(onCancel) } }
    let handler = diagnostics ?? DiagnosticsHandler.current
    let location = "\(fileID):\(line)"
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation(isolation: isolation) {
            (continuation: CheckedContinuation<Value, any Error>) in
            switch storage.withLock({ $0.register(continuation, isCancelled: Task.isCancelled) }) {
            case .resumeCancelled:
                continuation.resume(throwing: CancellationError())
            case .start:
                let completion = Completion(storage: storage, diagnostics: handler, location: location)
                do {
                    try body(completion)
                } catch {
                    completion(.failure(error))
                }
            }
        }
    } onCancel: {
        let (continuation, handlers) = storage.withLock { $0.cancel() }
        continuation?.resume(throwing: CancellationError())
        for handler in handlers { handler() }
    }
}
