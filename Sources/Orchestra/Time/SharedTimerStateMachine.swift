import HeapModule

/// The state of a ``SharedTimer``: sleepers ordered by deadline, and the one deadline a
/// driver is sleeping until. Pure: it never reads a clock (`now` is passed in), resumes a
/// waiter or starts a task; it returns what its storage must do.
///
/// A cancelled sleeper leaves the waiters at once; its heap entry is dropped when it reaches
/// the top, and the heap is rebuilt from the live entries whenever stale ones outnumber them,
/// so memory follows the sleepers still waiting, not those that ever waited.
package struct SharedTimerStateMachine<Instant: InstantProtocol, Waiter> {
    private struct Entry: Comparable {
        var deadline: Instant
        var id: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.id < rhs.id)
        }
    }

    /// A driver to start: it sleeps until `deadline`, then reports back with `generation`.
    package struct Arm: Equatable {
        package var deadline: Instant
        package var generation: UInt64
    }

    /// What to do with a sleeper that asked to wait.
    package enum SuspendAction {
        /// Its deadline has passed: resume it now.
        case resumeExpired
        /// Its task is cancelled: resume it with `CancellationError`.
        case resumeCancelled
        /// It waits; start a driver if `arm` is set.
        case suspended(arm: Arm?)
    }

    private var heap = Heap<Entry>()
    private var waiters: [UInt64: Waiter] = [:]
    private var nextID: UInt64 = 0
    /// The deadline the newest driver sleeps until (a superseded driver's report is ignored).
    private var armed: Arm?
    private var generation: UInt64 = 0

    package init() {}

    /// Sleepers still waiting.
    package var waiting: Int { waiters.count }
    /// Heap entries, live and stale: at most about twice ``waiting`` (plus a constant).
    package var entries: Int { heap.count }

    /// An id for a sleeper about to suspend.
    package mutating func reserve() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// The sleeper `id` suspends until `deadline`. Called under the lock with the task's
    /// cancellation flag read there, so a cancellation is seen either here or by ``cancel(id:)``.
    package mutating func suspend(
        id: UInt64, until deadline: Instant, waiter: Waiter, isCancelled: Bool, now: Instant
    ) -> SuspendAction {
        if isCancelled { return .resumeCancelled }
        if deadline <= now { return .resumeExpired }
        heap.insert(Entry(deadline: deadline, id: id))
        waiters[id] = waiter
        if let armed, armed.deadline <= deadline { return .suspended(arm: nil) }
        return .suspended(arm: arm(deadline))
    }

    /// The sleeper `id` leaves before its deadline (its task was cancelled, or what it waited
    /// for ended first): its waiter, if it was still waiting.
    package mutating func withdraw(id: UInt64) -> Waiter? {
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        if heap.count > 64 && heap.count > 2 * waiters.count {
            heap = Heap(heap.unordered.filter { waiters[$0.id] != nil })
        }
        return waiter
    }

    /// The driver of `generation` woke at `now`: the waiters whose deadline has passed, and
    /// the next driver to start, if any waiter is left. A superseded driver gets nothing.
    package mutating func fire(generation: UInt64, now: Instant) -> (expired: [Waiter], arm: Arm?) {
        guard armed?.generation == generation else { return ([], nil) }
        armed = nil
        var expired: [Waiter] = []
        while let top = heap.min, top.deadline <= now || waiters[top.id] == nil {
            heap.removeMin()
            if let waiter = waiters.removeValue(forKey: top.id) { expired.append(waiter) }
        }
        return (expired, heap.min.map { arm($0.deadline) })
    }

    private mutating func arm(_ deadline: Instant) -> Arm {
        generation += 1
        let arm = Arm(deadline: deadline, generation: generation)
        armed = arm
        return arm
    }
}
extension SharedTimerStateMachine: Sendable where Instant: Sendable, Waiter: Sendable {}
