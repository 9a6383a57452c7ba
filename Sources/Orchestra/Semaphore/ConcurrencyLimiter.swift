/// Admits at most ``limit`` concurrent pieces of work; the limit can change while work runs.
///
/// "Set how many downloads run at once, dynamically": raise the limit and waiting
/// work is admitted at once; lower it and running work finishes undisturbed while nothing new
/// starts until the number running is below the new limit.
///
/// ```swift
/// let limiter = ConcurrencyLimiter(limit: 2)
/// async let a = limiter.withPermit { try await download(url1) }
/// limiter.limit = 6   // e.g. the user switched to Wi‑Fi
/// ```
///
/// Waiters are admitted first in, first out. Cancellation while waiting throws
/// `CancellationError` and takes no slot.
///
/// Cost: the same engine as ``AsyncSemaphore``: an ``acquire()`` that finds a slot and a
/// ``release()`` that finds nobody waiting are one atomic operation each, with no lock and no
/// allocation; changing the limit takes the lock of the waiters.
public final class ConcurrencyLimiter: Sendable {
    @usableFromInline let slots: AtomicPermits

    /// Creates a limiter.
    ///
    /// - Parameter limit: The maximum number of concurrent holders; `0` pauses admission.
    public init(limit: Int) {
        checkArgument(limit >= 0, "ConcurrencyLimiter(limit:): limit must be 0 or more, got \(limit)")
        slots = AtomicPermits(limit)
    }

    /// The maximum number of concurrent holders. Setting it admits waiters at once when it
    /// rises; when it falls, running work is not interrupted.
    ///
    /// Setting a negative value is a programmer error and traps.
    public var limit: Int {
        get { slots.limit }
        set { setLimit(newValue) }
    }

    /// Changes the limit; see ``limit``.
    public func setLimit(_ newLimit: Int) {
        checkArgument(newLimit >= 0, "ConcurrencyLimiter.limit must be 0 or more, got \(newLimit)")
        slots.setLimit(newLimit)
    }

    /// Takes a slot, suspending until the number running is below the limit.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it gets a slot.
    @inlinable
    nonisolated(nonsending) public func acquire() async throws {
        try await slots.take()
    }

    /// Takes a slot if one is free now.
    public func tryAcquire() -> Bool {
        slots.tryTake()
    }

    /// Gives back a slot taken by ``acquire()`` or ``tryAcquire()``.
    @inlinable
    public func release() {
        slots.giveBack()
    }

    /// Runs `body` while holding a slot, releasing it however `body` ends.
    ///
    /// - Throws: `CancellationError` if cancelled while waiting (then `body` does not run),
    ///   or whatever `body` throws.
    @inlinable
    nonisolated(nonsending) public func withPermit<Result>(
        _ body: nonisolated(nonsending) () async throws -> Result
    ) async throws -> Result {
        try await acquire()
        defer { release() }
        return try await body()
    }

    /// The number of slots in use now (may exceed ``limit`` right after it was lowered).
    public var running: Int {
        slots.held
    }

    /// The number of tasks waiting for a slot now.
    public var waitingCount: Int {
        slots.waitingCount
    }
}
