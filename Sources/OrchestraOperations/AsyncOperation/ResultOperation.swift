import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

/// An asynchronous operation that finishes with a `Result`, which async code can await:
///
/// ```swift
/// let profile = ResultOperation<Profile> { operation in
///     legacyFetchProfile { profile, error in
///         operation.finish(with: Result { try profile ?? { throw error! }() })
///     }
/// }
/// queue.addOperation(profile)
/// show(try await profile.value)
/// ```
///
/// Subclass it and override ``AsyncOperation/execute()``, or give the work as a closure.
/// ``AsyncOperation/finish()`` without a value is not allowed for a result operation: use
/// ``finish(with:)``; the plain `finish()` of a cancellation or a timeout records the error.
open class ResultOperation<Success: Sendable>: AsyncOperation, @unchecked Sendable {
    private let stored = Locked<Result<Success, any Error>?>(nil)
    private let block: (@Sendable (ResultOperation<Success>) -> Void)?
    private let cancellation = Locked<(@Sendable () -> Void)?>(nil)

    /// An operation whose subclass overrides ``AsyncOperation/execute()``.
    override public init() {
        self.block = nil
        super.init()
    }

    /// An operation whose work is `block`; it must call ``finish(with:)``.
    public init(_ block: @escaping @Sendable (ResultOperation<Success>) -> Void) {
        self.block = block
        super.init()
    }

    /// How the operation ended, once it has finished: its value or its error (a
    /// `TimeoutError`, `CancellationError`, or what the work failed with).
    public var result: Result<Success, any Error>? {
        stored.withLock { $0 }
    }

    /// Waits for the operation to finish and returns its value.
    ///
    /// - Throws: The operation's error; `CancellationError` if the waiting task is cancelled
    ///   first (the operation goes on).
    public var value: Success {
        get async throws {
            try await waitUntilFinished()
            return try result!.get()
        }
    }

    /// Sets what cancelling the running operation does to the work; the operation then
    /// finishes with `CancellationError` (or `TimeoutError` after a timeout).
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        cancellation.withLock { $0 = handler }
    }

    /// Finishes the operation with `result`. Thread-safe; a second call is ignored and
    /// reported to ``AsyncOperation/diagnostics``.
    public final func finish(with result: Result<Success, any Error>) {
        switch result {
        case .success(let value):
            finish(error: nil) { self.stored.withLock { $0 = .success(value) } }
        case .failure(let error):
            finish(error: error)
        }
    }

    override open func execute() {
        guard let block else {
            finish(with: .failure(CancellationError()))
            return
        }
        block(self)
    }

    override open func executionCancelled() {
        let handler = cancellation.withLock { handler in
            defer { handler = nil }
            return handler
        }
        handler?()
        finish(error: CancellationError())
    }

    override func willFinish() {
        // Whatever ended it, the result is set before `isFinished` is: dependents and waiters
        // always read one.
        let error = self.error ?? CancellationError()
        stored.withLock { if $0 == nil { $0 = .failure(error) } }
    }
}
