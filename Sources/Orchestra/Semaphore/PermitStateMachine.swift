/// The pure state behind ``ConcurrencyLimiter``: a count of available permits, the limit, and
/// a FIFO queue of waiters. (``AsyncSemaphore``, whose permits never change in number, keeps its
/// count in an atomic and only its waiters behind a lock: ``SemaphoreWaiters``.)
///
/// Invariant: while a waiter is queued, `available <= 0` (a release hands its permit to the
/// oldest waiter instead of adding it to `available`). `available` is negative when a
/// ``ConcurrencyLimiter`` was lowered below the number of permits in use.
struct PermitStateMachine: Sendable {
    private(set) var available: Int
    /// The total number of permits (``ConcurrencyLimiter/limit``).
    private(set) var capacity: Int
    private var waiters = WaiterQueue<Continuation>()

    init(available: Int) {
        self.available = available
        self.capacity = available
    }

    /// Permits in use: `capacity - available`.
    var inUse: Int { capacity - available }

    var waiterCount: Int { waiters.count }

    /// Takes a permit if one is free, or reserves an id for a waiter that must suspend.
    /// A cancelled caller never takes a permit.
    mutating func admitOrReserve(_: Void = (), isCancelled: Bool) -> AdmissionFastPath {
        if isCancelled { return .cancelled }
        if available > 0 {
            available -= 1
            return .admitted
        }
        return .mustWait(id: waiters.makeID())
    }

    mutating func tryAcquire() -> Bool {
        guard available > 0 else { return false }
        available -= 1
        return true
    }

    /// Called from inside the continuation closure, under the lock.
    mutating func suspend(
        id: UInt64, request _: Void = (), continuation: Continuation, isCancelled: Bool
    ) -> AdmissionSuspendAction {
        // A permit may have been released between the fast path and now.
        if available > 0 {
            available -= 1
            return .resumeAdmitted
        }
        if isCancelled { return .resumeCancelled }
        waiters.append(continuation, id: id)
        return .suspended
    }

    /// The waiter with `id` was cancelled: if it is still queued, it leaves without a permit.
    mutating func cancel(id: UInt64) -> Continuation? {
        waiters.remove(id: id)
    }

    /// Returns one permit; hands it to the oldest waiter if there is one.
    mutating func release() -> Continuation? {
        if waiters.isEmpty {
            available += 1
            return nil
        }
        if available >= 0, let waiter = waiters.popFirst() {
            return waiter
        }
        available += 1
        return nil
    }

    /// Changes the total number of permits and returns the waiters admitted by a rise.
    /// A fall lets holders keep their permits: `available` goes negative until enough return.
    mutating func setCapacity(_ newCapacity: Int) -> [Continuation] {
        available += newCapacity - capacity
        capacity = newCapacity
        var admitted: [Continuation] = []
        while available > 0, let waiter = waiters.popFirst() {
            available -= 1
            admitted.append(waiter)
        }
        return admitted
    }
}
