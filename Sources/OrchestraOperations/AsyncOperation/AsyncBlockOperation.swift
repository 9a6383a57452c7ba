import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

/// An asynchronous operation made from a closure that starts the work and calls
/// ``AsyncOperation/finish()`` on the operation it is given when the work is done: the
/// hand-written asynchronous block operation, with its `isExecuting`/`isFinished` notifications
/// done right.
///
/// ```swift
/// let download = AsyncBlockOperation { operation in
///     legacyDownload(url) { _ in operation.finish() }
/// }
/// download.onCancel { request.cancel() }
/// queue.addOperation(download)
/// ```
///
/// All of ``AsyncOperation``'s guarantees hold: a second `finish()` is ignored and reported,
/// cancelling it while it runs runs the ``onCancel(_:)`` handler and finishes it, and a
/// ``AsyncOperation/timeout`` ends one whose callback never fires.
public final class AsyncBlockOperation: AsyncOperation, @unchecked Sendable {
    private let block: @Sendable (AsyncBlockOperation) -> Void
    private let cancellation = Locked<(@Sendable () -> Void)?>(nil)

    /// - Parameter block: Starts the work; called once, on the queue's thread, when the
    ///   operation starts (never if it was cancelled before). It must arrange for
    ///   ``AsyncOperation/finish()`` to be called.
    public init(_ block: @escaping @Sendable (AsyncBlockOperation) -> Void) {
        self.block = block
        super.init()
    }

    /// Sets what cancelling the running operation does to the work (cancel the request); the
    /// operation then finishes. Runs at most once, on the thread that cancelled it.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        cancellation.withLock { $0 = handler }
    }

    override public func execute() {
        block(self)
    }

    override public func executionCancelled() {
        let handler = cancellation.withLock { handler in
            defer { handler = nil }
            return handler
        }
        handler?()
        finish()
    }
}
