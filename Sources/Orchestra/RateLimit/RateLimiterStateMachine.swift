/// The pure state behind ``RateLimiter``: a generic cell rate algorithm (GCRA), a FIFO queue of
/// waiters, and the one driver that wakes the head of the queue.
///
/// Time is an offset from the limiter's creation on its clock, passed in as `now` (the machine
/// never reads a clock, resumes a waiter or starts a task; it returns what its storage must do).
///
/// The algorithm keeps one instant, the *theoretical arrival time* `tat`: the time at which the
/// bucket would be empty again if no more permits were taken. With `spacing` *T* and
/// `burst` *b*, the tolerance is τ = *T*·(*b* − 1); a permit may be granted at `now` when
/// `tat − τ ≤ now`, and granting it sets `tat = max(tat, now) + T`. So *b* permits can be
/// granted at once from a full bucket, then one every *T*, and any window of length *W* holds
/// at most *b* + *W*/*T* grants. No refill task: the bucket's level is `max(tat − now, 0)`.
///
/// Waiters hold no slot while they wait: a grant goes to the oldest waiter when the head of the
/// queue is due, so a waiter that leaves (cancelled) delays nobody. New callers never overtake
/// the queue. One driver sleeps until the head is due; it is replaced (the old one cancelled)
/// only when the head becomes due earlier (a faster rate), and stopped when the queue empties.
///
/// Every time is clamped: ``Rate/spacing`` is at most ``Rate/maximumSpacing``, τ at most
/// ``maximumTolerance``, a pause at most ``maximumTolerance`` ahead, so `tat` stays within a few
/// hundred years of `now` and no `Duration` arithmetic can overflow.
struct RateLimiterStateMachine<Waiter, Driver> {
    /// A driver to start: it sleeps until `deadline`, then calls ``fire(generation:now:)``.
    struct Arm: Equatable {
        var deadline: Duration
        var generation: UInt64
    }

    /// What the storage does after an event, outside the lock: resume `admitted` (in order),
    /// cancel the driver `stop`, start a driver for `start`.
    struct Actions {
        var admitted: [Waiter] = []
        var stop: Driver?
        var start: Arm?
    }

    enum SuspendAction {
        /// Granted at once (the queue was empty and a permit was free).
        case resumeAdmitted
        /// The task is cancelled: it leaves with `CancellationError`, having taken nothing.
        case resumeCancelled
        /// Queued; start a driver if `start` is set.
        case suspended(start: Arm?)
    }

    fileprivate struct Running {
        var generation: UInt64
        var deadline: Duration
        var handle: Driver?
    }

    /// The largest tolerance τ (and the furthest a pause reaches ahead): 2³² seconds.
    static var maximumTolerance: Duration { Rate.maximumSpacing }

    private(set) var rate: Rate
    let burst: Int
    private(set) var spacing: Duration
    private(set) var tolerance: Duration
    /// The theoretical arrival time (see the type's documentation).
    private(set) var tat: Duration = .zero
    /// No grant before this time (``pause(until:now:)``).
    private(set) var pausedUntil: Duration = .zero
    /// The latest `now` seen: a clock that goes back is read as standing still.
    private var latest: Duration = .zero
    private var waiters = WaiterQueue<Waiter>()
    private var driver: Running?
    private var generation: UInt64 = 0

    init(rate: Rate, burst: Int) {
        self.rate = rate
        self.burst = burst
        self.spacing = rate.spacing
        self.tolerance = Self.makeTolerance(spacing: rate.spacing, burst: burst)
    }

    var waiterCount: Int { waiters.count }
    /// The deadline of the running driver, if one runs.
    var driverDeadline: Duration? { driver?.deadline }

    /// When the head of the queue (or the next caller) may be granted a permit.
    var nextGrant: Duration { max(tat - tolerance, pausedUntil) }

    /// Whether the bucket is full (every permit of a burst free) and nobody waits at `now`: a
    /// limiter in this state behaves exactly like a new one, so ``KeyedRateLimiter`` may drop it.
    func isIdle(now: Duration) -> Bool {
        waiters.isEmpty && tat <= max(now, latest) && pausedUntil <= max(now, latest)
    }

    /// How many permits ``tryAcquire(now:)`` would grant one after another at `now`: 0 while
    /// somebody waits or before ``nextGrant``, at least 1 from then on, at most ``burst``
    /// (`Int.max` for a rate too fast to measure, which limits nothing).
    func grantable(now: Duration) -> Int {
        let now = max(now, latest)
        guard waiters.isEmpty, now >= nextGrant else { return 0 }
        guard spacing > .zero else { return .max }
        // Each grant moves `tat` (from at least `now`) by one spacing; one more is possible
        // while `tat - tolerance <= now`.
        let room = now + tolerance - max(tat, now)
        let more = room / spacing
        return more >= Double(burst - 1) ? burst : 1 + Int(more.rounded(.down))
    }

    /// A caller arrives: granted now, refused (its task is cancelled), or given an id to wait
    /// under. A grant needs an empty queue: nobody overtakes a waiter.
    mutating func admitOrReserve(now: Duration, isCancelled: Bool) -> AdmissionFastPath {
        if isCancelled { return .cancelled }
        if tryAcquire(now: now) { return .admitted }
        return .mustWait(id: waiters.makeID())
    }

    /// Grants a permit now if the queue is empty and one is free.
    mutating func tryAcquire(now: Duration) -> Bool {
        let now = observe(now)
        guard waiters.isEmpty, now >= nextGrant else { return false }
        take(now)
        return true
    }

    /// Called under the lock from inside the continuation closure, with the task's
    /// cancellation flag read there.
    mutating func suspend(id: UInt64, waiter: Waiter, isCancelled: Bool, now: Duration) -> SuspendAction {
        if isCancelled { return .resumeCancelled }
        if tryAcquire(now: now) { return .resumeAdmitted }
        waiters.append(waiter, id: id)
        if driver != nil { return .suspended(start: nil) }
        return .suspended(start: arm(nextGrant))
    }

    /// The waiter `id` was cancelled: it leaves if still queued (it held no slot, so the next
    /// waiter keeps its time). The driver stops when nobody is left.
    mutating func cancel(id: UInt64) -> (waiter: Waiter?, stop: Driver?) {
        guard let waiter = waiters.remove(id: id) else { return (nil, nil) }
        return (waiter, waiters.isEmpty ? stopDriver() : nil)
    }

    /// The driver of `generation` woke at `now`: the waiters now due, oldest first, and the
    /// deadline it sleeps until next (`nil`: it ends). A superseded driver gets nothing.
    mutating func fire(generation: UInt64, now: Duration) -> (admitted: [Waiter], next: Duration?) {
        guard driver?.generation == generation else { return ([], nil) }
        let admitted = admitDue(now: observe(now))
        if waiters.isEmpty {
            driver = nil
            return (admitted, nil)
        }
        let next = nextGrant
        driver?.deadline = next
        return (admitted, next)
    }

    /// The driver of `generation` was started as `handle`. `false` if it is already superseded
    /// or done: the storage cancels it (cancelling a finished task does nothing).
    mutating func attach(_ handle: Driver, generation: UInt64) -> Bool {
        guard driver?.generation == generation, driver?.handle == nil else { return false }
        driver?.handle = handle
        return true
    }

    /// Changes the rate. The permits taken and not yet earned back are kept (the bucket's level
    /// is rescaled), so waiters are granted at the new rate from now on; those due at once are
    /// admitted.
    mutating func setRate(_ newRate: Rate, now: Duration) -> Actions {
        let now = observe(now)
        let level = tat - now
        if level > .zero {
            let permitsInUse = spacing > .zero ? level / spacing : 0
            let newLevel = Duration.wholeNanoseconds(permitsInUse * newRate.spacing.seconds)
            tat = now + min(newLevel, Self.maximumTolerance + Rate.maximumSpacing)
        }
        rate = newRate
        spacing = newRate.spacing
        tolerance = Self.makeTolerance(spacing: spacing, burst: burst)
        return reschedule(now: now)
    }

    /// Grants nothing before `deadline` (at most ``maximumTolerance`` from now); a later pause
    /// extends an earlier one, an earlier one changes nothing. Waiters keep their order.
    mutating func pause(until deadline: Duration, now: Duration) {
        let now = observe(now)
        pausedUntil = max(pausedUntil, min(deadline, now + Self.maximumTolerance))
        // The head is due later: the driver wakes at its old deadline, finds nothing due and
        // sleeps again until the new one.
    }

    // MARK: - Private

    private mutating func observe(_ now: Duration) -> Duration {
        if now > latest { latest = now }
        return latest
    }

    private mutating func take(_ now: Duration) {
        tat = max(tat, now) + spacing
    }

    /// Grants the waiters due at `now`, oldest first. A waiter granted late (the driver woke
    /// after its due time) is counted from its due time, up to just under one spacing back: the
    /// schedule keeps its pace instead of losing each wake-up's delay (at 50/s, 0.3 ms a grant
    /// made 60 s last 60.8), and no window holds more grants than on time, because a grant
    /// stays less than one spacing after the instant it is counted at.
    private mutating func admitDue(now: Duration) -> [Waiter] {
        var admitted: [Waiter] = []
        while !waiters.isEmpty, now >= nextGrant, let waiter = waiters.popFirst() {
            let counted = spacing > .zero ? max(nextGrant, now - spacing + .nanoseconds(1)) : now
            take(counted)
            admitted.append(waiter)
        }
        return admitted
    }

    /// After the head's due time changed: admits those due now, then makes the driver wake
    /// no later than the new due time (or stops it when nobody is left).
    private mutating func reschedule(now: Duration) -> Actions {
        var actions = Actions(admitted: admitDue(now: now))
        if waiters.isEmpty {
            actions.stop = stopDriver()
        } else if let running = driver, running.deadline <= nextGrant {
            // It wakes early, finds nothing due and sleeps again until the head is due.
        } else {
            actions.stop = stopDriver()
            actions.start = arm(nextGrant)
        }
        return actions
    }

    private mutating func arm(_ deadline: Duration) -> Arm {
        generation += 1
        driver = Running(generation: generation, deadline: deadline, handle: nil)
        return Arm(deadline: deadline, generation: generation)
    }

    private mutating func stopDriver() -> Driver? {
        defer { driver = nil }
        return driver?.handle
    }

    /// τ = spacing × (burst − 1), at most ``maximumTolerance``: multiplied only when the
    /// product is below the bound, so it cannot overflow.
    private static func makeTolerance(spacing: Duration, burst: Int) -> Duration {
        let extra = burst - 1
        guard extra > 0, spacing > .zero else { return .zero }
        guard Double(extra) < maximumTolerance / spacing else { return maximumTolerance }
        return min(spacing * extra, maximumTolerance)
    }
}

extension RateLimiterStateMachine: Sendable where Waiter: Sendable, Driver: Sendable {}
extension RateLimiterStateMachine.Running: Sendable where Waiter: Sendable, Driver: Sendable {}
