/// A counting semaphore for async code that suspends instead of blocking a thread.
///
/// `dispatch_semaphore_wait` blocks the calling thread; on Swift's cooperative thread pool
/// that can starve every other task. `AsyncSemaphore` suspends the waiting task instead.
/// Waiters are served first in, first out.
///
/// ```swift
/// let semaphore = AsyncSemaphore(value: 2)   // at most two downloads at once
/// try await semaphore.withPermit {
///     try await download(url)
/// }
/// ```
///
/// Cancellation: ``wait()`` throws `CancellationError` if the waiting task is cancelled
/// before it gets a permit, and then holds no permit. Permits are never lost or duplicated,
/// however cancellations and signals race.
///
/// Cost: a `wait()` that finds a permit and a `signal()` that finds no waiter are one atomic
/// operation each, with no lock and no allocation; only a task that must wait (and the signal
/// that wakes it) takes the lock of the queue.
public final class AsyncSemaphore: Sendable {
    @usableFromInline let permits: AtomicPermits

    /// Creates a semaphore with `value` permits.
    ///
    /// - Parameter value: The number of permits available at first; must be zero or more.
    public init(value: Int) {
        checkArgument(value >= 0, "AsyncSemaphore(value:): value must be 0 or more, got \(value)")
        permits = AtomicPermits(value)
    }

    /// Takes a permit, suspending until one is available.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it gets a permit
    ///   (including when it is already cancelled at the call); it then holds no permit.
    /// - Complexity: O(1); one atomic operation when a permit is free.
    @inlinable
    nonisolated(nonsending) public func wait() async throws {
        try await permits.take()
    }

    /// Takes a permit if one is available right now, without suspending.
    ///
    /// - Returns: `true` if a permit was taken (balance it with ``signal()``).
    public func tryWait() -> Bool {
        permits.tryTake()
    }

    /// Returns a permit: resumes the longest-waiting task, or makes the permit available.
    @inlinable
    public func signal() {
        permits.giveBack()
    }

    /// Runs `body` while holding a permit, and returns the permit when it ends, whether it
    /// returns or throws.
    ///
    /// - Throws: `CancellationError` if cancelled while waiting for the permit (then `body`
    ///   does not run), or whatever `body` throws.
    @inlinable
    nonisolated(nonsending) public func withPermit<Result>(
        _ body: nonisolated(nonsending) () async throws -> Result
    ) async throws -> Result {
        try await wait()
        defer { signal() }
        return try await body()
    }

    /// The number of permits available now (negative values never occur for a semaphore).
    /// For diagnostics and tests; the value may change as soon as it is read.
    public var availablePermits: Int {
        permits.free
    }

    /// The number of tasks waiting for a permit now.
    public var waitingCount: Int {
        permits.waitingCount
    }
}
