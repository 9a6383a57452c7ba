import Atomics

/// The permits of ``AsyncSemaphore`` and ``ConcurrencyLimiter``: an atomic count for the fast
/// path and, behind a lock, the waiters (``SemaphoreWaiters``) for the slow one.
///
/// The count is the permits free minus the tasks committed to waiting and the permits owed
/// back (a limit lowered below the number in use). A take that finds a permit and a give-back
/// that finds nobody owed are one atomic operation each, with no lock and no allocation; only
/// a task that must wait, the give-back that serves it, and a change of the limit take the lock.
///
/// The fast paths (``take()``, ``giveBack()``) are inlined into the caller's module, so that an
/// app's `wait()` and `signal()` cost their atomic operation and not a call into this module
/// too; what takes the lock stays behind a call (``waitAfterCommit()``, ``serveOne()``).
@usableFromInline
struct AtomicPermits: Sendable {
    @usableFromInline let count: ManagedAtomic<Int>
    private let waiters: Locked<SemaphoreAdmission>

    init(_ value: Int) {
        count = ManagedAtomic(value)
        waiters = Locked(SemaphoreAdmission(count: count, limit: value))
    }

    /// Takes a permit, suspending in first-in, first-out order until one is free.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it gets a permit
    ///   (including when it is already cancelled at the call); it then holds no permit.
    @inlinable
    nonisolated(nonsending) func take() async throws {
        if Task.isCancelled { throw CancellationError() }
        if count.loadThenWrappingDecrement(ordering: .acquiringAndReleasing) > 0 { return }
        try await waitAfterCommit()
    }

    /// The slow half of ``take()``: this task's decrement is a claim that some give-back will
    /// serve, so it queues (or takes a permit already handed over) until one does.
    @usableFromInline
    nonisolated(nonsending) func waitAfterCommit() async throws {
        try await waiters.suspendUntilAdmitted()
    }

    /// Takes a permit if one is free now.
    @inline(__always)
    func tryTake() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = count.weakCompareExchange(
                expected: current, desired: current - 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives a permit back: pays what is owed (a debt of a lowered limit, then the
    /// longest-waiting task), or makes it free.
    @inlinable
    func giveBack() {
        if count.loadThenWrappingIncrement(ordering: .acquiringAndReleasing) >= 0 { return }
        serveOne()
    }

    /// The slow half of ``giveBack()``: someone is owed (a debt, or a waiter).
    @usableFromInline
    func serveOne() {
        waiters.withLock { $0.waiters.signal() }?.resume()
    }

    /// Changes the number of permits in all; a rise admits waiters at once, a fall lets the
    /// holders keep theirs (see ``SemaphoreAdmission/setLimit(_:)``).
    func setLimit(_ limit: Int) {
        for waiter in waiters.withLock({ $0.setLimit(limit) }) { waiter.resume() }
    }

    /// The number of permits in all, as last set.
    var limit: Int { waiters.withLock { $0.limit } }

    /// The permits free now (never negative).
    var free: Int { max(count.load(ordering: .relaxed), 0) }

    /// The permits held now: the limit minus the count and the queued waiters. Exact when no
    /// task is between its decrement and the queue; may exceed the limit right after it fell.
    var held: Int {
        waiters.withLock { $0.limit - count.load(ordering: .relaxed) - $0.waiters.count }
    }

    /// The number of tasks queued for a permit now.
    var waitingCount: Int { waiters.withLock { $0.waiters.count } }
}
