/// Grants at most ``rate`` permits per interval, after an initial ``burst``: for "at most 50
/// requests a second" where a ``ConcurrencyLimiter`` says "at most 8 at once".
///
/// ```swift
/// let github = RateLimiter(rate: .perHour(5000), burst: 100)
///
/// for repository in repositories {
///     try await github.acquire()               // suspends until this call may start
///     try await fetchIssues(of: repository)
/// }
/// ```
///
/// A full bucket grants ``burst`` permits at once, then one every ``Rate/spacing`` (for
/// `.perSecond(50)`, every 20 ms); unused time refills the bucket up to `burst` again, with no
/// task running for it. Any window of length *W* holds at most `burst + W / spacing` grants.
/// Waiters are granted first in, first out, and a caller never overtakes a waiter. One task
/// sleeps on the clock for the whole queue (none per waiter, none while nobody waits).
///
/// Cancellation: a task cancelled while it waits (or already cancelled when it calls) throws
/// `CancellationError` and takes no permit; it held no place in time, so the waiter behind it
/// is granted when it would have been. A task granted a permit before its cancellation was
/// seen returns normally: the permit is used, never lost or granted twice.
///
/// Permits are not returned: a rate counts starts. Combine it with a ``ConcurrencyLimiter`` to
/// bound how many run at once as well.
public final class RateLimiter: Sendable {
    typealias Continuation = CheckedContinuation<Void, any Error>
    typealias Machine = RateLimiterStateMachine<Continuation, Task<Void, Never>>

    private let state: Locked<Machine>
    /// Time since the limiter's creation on its clock.
    private let elapsed: @Sendable () -> Duration
    /// Sleeps until that offset from the limiter's creation.
    private let sleep: @Sendable (Duration) async throws -> Void

    /// Creates a limiter whose bucket is full: `burst` permits are free at once.
    ///
    /// - Parameters:
    ///   - rate: How many permits per interval, e.g. `.perSecond(50)`.
    ///   - burst: How many permits may be granted at once after a quiet time; 1 (the default)
    ///     spaces every grant by the rate's ``Rate/spacing``. Must be at least 1.
    ///   - clock: The clock the spacing is measured on; a test passes a `ManualClock`.
    public init<C: Clock>(rate: Rate, burst: Int = 1, clock: C = ContinuousClock()) where C.Duration == Duration {
        checkArgument(burst >= 1, "RateLimiter(burst:): burst must be 1 or more, got \(burst)")
        state = Locked(Machine(rate: rate, burst: burst))
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleep = { offset in
            // On `ContinuousClock`, through the shared timer, which forgets a cancelled sleep
            // at once (the driver is cancelled whenever its queue empties).
            try await sleepReleasingOnCancel(until: start.advanced(by: offset), tolerance: nil, clock: clock)
        }
    }

    /// The permits granted per interval. Setting it changes the spacing for everyone from now
    /// on, waiters already queued included: the permits taken recently count at the new rate
    /// (a bucket half used stays half used), and waiters now due are granted at once.
    public var rate: Rate {
        get { state.withLock { $0.rate } }
        set { setRate(newValue) }
    }

    /// The most permits granted at once after a quiet time.
    public var burst: Int { state.withLock { $0.burst } }

    /// Changes the rate; see ``rate``.
    public func setRate(_ newRate: Rate) {
        let now = elapsed()
        perform(state.withLock { $0.setRate(newRate, now: now) })
    }

    /// Grants nothing before `duration` has passed on the limiter's clock (at most about 136
    /// years): for a server that answered "429 Too Many Requests, retry after 2 s". A longer
    /// pause extends a shorter one; a shorter one changes nothing. Waiters keep their order,
    /// and the bucket fills meanwhile, so up to ``burst`` are granted when the pause ends.
    ///
    /// A negative duration is a programmer error and traps.
    public func pause(for duration: Duration) {
        checkArgument(duration >= .zero, "RateLimiter.pause(for:): duration must not be negative, got \(duration)")
        let now = elapsed()
        let deadline = now + min(duration, Rate.maximumSpacing)
        state.withLock { $0.pause(until: deadline, now: now) }
    }

    /// Takes a permit, suspending (never blocking a thread) until one is granted, oldest
    /// waiter first.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it is granted a permit
    ///   (including when it is already cancelled at the call); it then took nothing, and the
    ///   next waiter is not delayed.
    /// - Complexity: O(1) when a permit is free: one lock and one read of the clock.
    nonisolated(nonsending) public func acquire() async throws {
        let id: UInt64
        let now = elapsed()
        switch state.withLock({ $0.admitOrReserve(now: now, isCancelled: Task.isCancelled) }) {
        case .admitted: return
        case .cancelled: throw CancellationError()
        case .mustWait(let reserved): id = reserved
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Continuation) in
                let now = elapsed()
                // `Task.isCancelled` is read under the lock: the cancellation handler sets the
                // flag before it takes the lock, so either it finds this waiter queued or this
                // section sees the flag.
                let action = state.withLock {
                    $0.suspend(id: id, waiter: continuation, isCancelled: Task.isCancelled, now: now)
                }
                switch action {
                case .resumeAdmitted: continuation.resume()
                case .resumeCancelled: continuation.resume(throwing: CancellationError())
                case .suspended(let start): if let start { startDriver(start) }
                }
            }
        } onCancel: {
            let (waiter, stop) = state.withLock { $0.cancel(id: id) }
            stop?.cancel()
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Takes a permit if one is free now and nobody is waiting, without suspending.
    ///
    /// - Returns: `true` if a permit was taken.
    public func tryAcquire() -> Bool {
        let now = elapsed()
        return state.withLock { $0.tryAcquire(now: now) }
    }

    /// Takes a permit, then runs `body`. The same as ``acquire()`` followed by `body`, for
    /// symmetry with ``ConcurrencyLimiter/withPermit(_:)``: the permit is not given back when
    /// `body` ends, because a rate counts starts, not work in progress.
    ///
    /// - Throws: `CancellationError` if cancelled while waiting (then `body` does not run),
    ///   or whatever `body` throws.
    @inlinable
    nonisolated(nonsending) public func withPermit<Result>(
        _ body: nonisolated(nonsending) () async throws -> Result
    ) async throws -> Result {
        try await acquire()
        return try await body()
    }

    /// How many permits ``tryAcquire()`` would grant one after another now, without taking
    /// any: 0 while somebody waits or before the next grant, at most ``burst`` (`Int.max` for a
    /// rate too fast to measure). For a scheduler that takes its permits only with
    /// ``tryAcquire()`` (a ``TaskGraph`` run's `rateLimits`).
    var grantableNow: Int {
        let now = elapsed()
        return state.withLock { $0.grantable(now: now) }
    }

    /// Suspends until ``grantableNow`` is at least 1 unless a caller takes the permit first or
    /// the rate changes: until the next grant is due on the limiter's clock. Takes nothing.
    ///
    /// - Throws: `CancellationError` if cancelled first.
    func waitUntilGrantable() async throws {
        let due = state.withLock { $0.nextGrant }
        if due > elapsed() { try await sleep(due) }
    }

    /// The number of tasks waiting for a permit now. For diagnostics and tests.
    public var waitingCount: Int {
        state.withLock { $0.waiterCount }
    }

    /// Whether nobody waits and every permit of a burst is free: the limiter is in the state of
    /// a new one.
    var isIdle: Bool {
        let now = elapsed()
        return state.withLock { $0.isIdle(now: now) }
    }

    private func perform(_ actions: Machine.Actions) {
        actions.stop?.cancel()
        if let start = actions.start { startDriver(start) }
        for waiter in actions.admitted { waiter.resume() }
    }

    private func startDriver(_ arm: Machine.Arm) {
        // Unstructured: the driver serves every waiter of this limiter, so it cannot be the
        // child of any one of them. It ends when the queue is empty; it is cancelled when the
        // queue empties by cancellation or when a faster rate needs an earlier wake-up.
        let task = Task { [self] in await drive(arm) }
        if !state.withLock({ $0.attach(task, generation: arm.generation) }) { task.cancel() }
    }

    private func drive(_ arm: Machine.Arm) async {
        var deadline = arm.deadline
        while true {
            do {
                try await sleep(deadline)
            } catch {
                return  // cancelled: superseded, or nobody is left to wake
            }
            let now = elapsed()
            let (admitted, next) = state.withLock { $0.fire(generation: arm.generation, now: now) }
            for waiter in admitted { waiter.resume() }
            guard let next else { return }
            deadline = next
        }
    }
}
