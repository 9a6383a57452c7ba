/// A one-shot event: tasks wait until it is signalled; after that every wait returns at once.
///
/// "Continue when the other callback has fired", without a blocked thread or a semaphore:
///
/// ```swift
/// let loaded = AsyncEvent()
/// legacyLoad { loaded.signal() }
/// try await loaded.wait()
/// ```
///
/// Signalling twice is harmless; an event cannot be reset (use ``AsyncGate`` for that).
/// Cancellation: a task cancelled while it waits throws `CancellationError`; waiting on an
/// event already signalled never throws.
public final class AsyncEvent: Sendable {
    private let storage: Locked<GateStateMachine>

    /// An event not yet signalled.
    public init() {
        storage = Locked(GateStateMachine(isOpen: false))
    }

    /// Wakes every waiting task, and lets all later waits pass at once.
    public func signal() {
        for waiter in storage.withLock({ $0.open() }) { waiter.resume() }
    }

    /// Returns when the event has been signalled.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before the signal.
    nonisolated(nonsending) public func wait() async throws {
        try await storage.suspendUntilAdmitted()
    }

    /// Whether ``signal()`` has been called.
    public var isSignalled: Bool {
        storage.withLock { $0.isOpen }
    }

    /// The number of tasks waiting now.
    public var waitingCount: Int {
        storage.withLock { $0.waiterCount }
    }
}
