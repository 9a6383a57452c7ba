/// A gate that tasks pass while it is open and wait at while it is closed.
///
/// A barrier, and "every request waits while the token is being refreshed":
///
/// ```swift
/// let auth = AsyncGate()                 // open
/// // each request:
/// try await auth.pass()
/// // the refresher:
/// auth.close()
/// defer { auth.open() }                  // releases every waiting request at once
/// token = try await refresh()
/// ```
///
/// Cancellation: a task cancelled while it waits at the closed gate throws
/// `CancellationError`. Passing an open gate never throws.
public final class AsyncGate: Sendable {
    private let storage: Locked<GateStateMachine>

    /// Creates a gate, open unless `isOpen` is `false`.
    public init(isOpen: Bool = true) {
        storage = Locked(GateStateMachine(isOpen: isOpen))
    }

    /// Returns at once if the gate is open; otherwise waits until it opens.
    ///
    /// - Throws: `CancellationError` if the task is cancelled while the gate is closed.
    nonisolated(nonsending) public func pass() async throws {
        try await storage.suspendUntilAdmitted()
    }

    /// Opens the gate and lets every waiting task through.
    public func open() {
        for waiter in storage.withLock({ $0.open() }) { waiter.resume() }
    }

    /// Closes the gate: tasks that call ``pass()`` from now on wait until ``open()``.
    /// Tasks already past the gate are not affected.
    public func close() {
        storage.withLock { $0.close() }
    }

    /// Whether the gate is open now.
    public var isOpen: Bool {
        storage.withLock { $0.isOpen }
    }

    /// The number of tasks waiting at the gate now.
    public var waitingCount: Int {
        storage.withLock { $0.waiterCount }
    }
}
