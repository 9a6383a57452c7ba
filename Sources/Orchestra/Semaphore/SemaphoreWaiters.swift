import Atomics

/// The slow half of ``AsyncSemaphore``, behind its lock: the tasks that found no permit, in
/// the order they queued, and the permits handed over to tasks still on their way to the queue.
///
/// The fast half is the semaphore's atomic count (permits free minus tasks committed to wait),
/// which decides who comes here:
/// - a waiter whose decrement left the count negative queues here (or takes a hand-over);
/// - a `signal()` whose increment found the count negative owes its permit to a waiter: it
///   resumes the oldest queued one, or leaves a hand-over for one still on its way;
/// - a cancelled waiter withdraws only while the count is negative (its own decrement still
///   unmatched); otherwise a signal is already on its way to it and it takes that permit.
///
/// So every permit goes to exactly one task, however signals, arrivals and cancellations race.
///
/// A ``ConcurrencyLimiter`` lowered below the number of permits in use also owes permits back:
/// each decrement of its lowering that found no free permit is a debt, which the next signals
/// pay before any waiter (nothing new starts until the number in use is below the new limit).
/// A debt is a waiter that never cancels and has nothing to resume, at the head of the queue.
struct SemaphoreWaiters<Waiter> {

    enum Arrival: Equatable, Sendable {
        /// A signal already handed over a permit: resume at once, admitted.
        case admitted
        /// Cancelled and withdrawn: resume at once with `CancellationError`.
        case cancelled
        /// Queued: a signal (or the cancellation handler) resumes it later.
        case queued
    }

    private var waiters = WaiterQueue<Waiter>()
    /// Permits given by signals that found no queued waiter, for waiters still on their way.
    private(set) var handOvers = 0
    /// Permits the holders owe back since a limit was lowered below the number in use.
    private(set) var debt = 0

    var count: Int { waiters.count }

    mutating func makeID() -> UInt64 { waiters.makeID() }

    /// A waiter that committed to wait reaches the queue.
    ///
    /// - Parameters:
    ///   - isCancelled: Whether its task is cancelled now.
    ///   - withdraw: Gives back its place in the count if no signal is on its way to it;
    ///     `true` if it did.
    mutating func arrive(
        id: UInt64, waiter: Waiter, isCancelled: Bool, withdraw: () -> Bool
    ) -> Arrival {
        if handOvers > 0 {
            handOvers -= 1
            return .admitted
        }
        if isCancelled, withdraw() { return .cancelled }
        waiters.append(waiter, id: id)
        return .queued
    }

    /// Adds `permits` decrements of a lowered limit that found no free permit.
    mutating func owe(_ permits: Int) {
        debt += permits
    }

    /// A signal owes its permit: to a debt first, then to the oldest queued waiter, or to a
    /// waiter still on its way (a hand-over).
    mutating func signal() -> Waiter? {
        if debt > 0 {
            debt -= 1
            return nil
        }
        if let waiter = waiters.popFirst() { return waiter }
        handOvers += 1
        return nil
    }

    /// The waiter with `id` was cancelled: it leaves (and is returned, to be resumed with
    /// `CancellationError`) if it is still queued and `withdraw` gives back its place; if a
    /// signal is already on its way, it stays and is admitted.
    mutating func cancel(id: UInt64, withdraw: () -> Bool) -> Waiter? {
        guard waiters.contains(id: id), withdraw() else { return nil }
        return waiters.remove(id: id)
    }
}

extension SemaphoreWaiters: Sendable where Waiter: Sendable {}

/// The semaphore's slow half as an ``AdmissionStateMachine``, so its waiters suspend on the
/// project's one suspension path (``Locked/suspendUntilAdmitted()``): the waiters, and the
/// count they withdraw from when cancelled.
struct SemaphoreAdmission: AdmissionStateMachine, Sendable {
    var waiters = SemaphoreWaiters<Continuation>()
    /// The count: permits free minus tasks committed to waiting and permits owed back.
    let count: ManagedAtomic<Int>
    /// A ``ConcurrencyLimiter``'s limit: the permits in all. (An ``AsyncSemaphore``, which may
    /// be signalled beyond its first value, starts it at that value and never reads it.)
    private(set) var limit: Int

    init(count: ManagedAtomic<Int>, limit: Int = 0) {
        self.count = count
        self.limit = limit
    }

    /// A waiter here has already committed its decrement to the count, so it always waits
    /// (or takes a hand-over, or withdraws, in ``suspend(id:request:continuation:isCancelled:)``),
    /// even if its task is cancelled: only a withdrawal gives its place back.
    mutating func admitOrReserve(_: Void = (), isCancelled _: Bool) -> AdmissionFastPath {
        .mustWait(id: waiters.makeID())
    }

    mutating func suspend(
        id: UInt64, request _: Void = (), continuation: Continuation, isCancelled: Bool
    ) -> AdmissionSuspendAction {
        switch waiters.arrive(id: id, waiter: continuation, isCancelled: isCancelled, withdraw: withdraw) {
        case .admitted: .resumeAdmitted
        case .cancelled: .resumeCancelled
        case .queued: .suspended
        }
    }

    mutating func cancel(id: UInt64) -> Continuation? {
        waiters.cancel(id: id, withdraw: withdraw)
    }

    /// Changes the limit (under the lock, so limits set at once are applied one after the
    /// other) and returns the waiters a rise admitted.
    ///
    /// A fall takes permits from the count: those that were free are gone, the rest are owed
    /// back by the holders. A rise adds permits: those that found the count negative each pay
    /// what is owed, a debt or a waiter, as signals would.
    mutating func setLimit(_ newLimit: Int) -> [Continuation] {
        let change = newLimit - limit
        limit = newLimit
        if change < 0 {
            let before = count.loadThenWrappingDecrement(by: -change, ordering: .acquiringAndReleasing)
            waiters.owe(-change - min(max(before, 0), -change))
            return []
        }
        let before = count.loadThenWrappingIncrement(by: change, ordering: .acquiringAndReleasing)
        return (0..<min(change, max(-before, 0))).compactMap { _ in waiters.signal() }
    }

    /// Gives back a cancelled waiter's place in the count, if no signal has claimed it yet
    /// (the count is still negative).
    private func withdraw() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < 0 {
            let (exchanged, original) = count.weakCompareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }
}
