import Orchestra

/// A clock whose time moves only when a test says so.
///
/// Code under test receives the clock (every Orchestra timing API takes
/// `clock: some Clock<Duration>`); the test waits until the expected number of tasks are
/// asleep on it, then advances it:
///
/// ```swift
/// let clock = ManualClock()
/// let task = Task { try await withTimeout(.seconds(5), clock: clock) { try await work() } }
/// try await clock.waitForSleepers(1)     // the timeout's timer is registered
/// clock.advance(by: .seconds(5))         // it fires, deterministically
/// ```
///
/// Advance only after the sleepers you expect are registered (``waitForSleepers(_:timeout:)``);
/// loops of `Task.yield()` are not enough on a busy 2-core machine. At the end of a test,
/// ``pendingSleepers`` tells whether anything is still suspended on the clock.
public final class ManualClock: Clock, Sendable {
    /// A point in the manual clock's time: an offset from the clock's creation.
    public struct Instant: InstantProtocol, Sendable, CustomStringConvertible {
        /// The time since the clock's start.
        public var offset: Duration

        /// The instant `offset` after the clock's start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// How long from this instant to `other`.
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// `t+1.5 seconds`.
        public var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        var count: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var watchers: [UInt64: Watcher] = [:]

        mutating func makeID() -> UInt64 {
            nextID += 1
            return nextID
        }

        /// Watchers whose sleeper count is now reached.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, any Error>] {
            let ready = watchers.filter { $0.value.count <= sleepers.count }
            for id in ready.keys { watchers[id] = nil }
            return ready.values.map(\.continuation)
        }

        /// Moves time to `instant` (never backwards) and removes the sleepers now due,
        /// earliest deadline first.
        mutating func advance(to instant: Instant) -> [CheckedContinuation<Void, any Error>] {
            if instant > now { now = instant }
            let due = sleepers.filter { $0.value.deadline <= now }
                .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in due { sleepers[id] = nil }
            return due.map(\.value.continuation)
        }
    }

    private let state = Locked(State())

    /// A clock at its start (offset zero), with no sleepers.
    public init() {}

    /// The current instant; it moves only when ``advance(by:)`` is called.
    public var now: Instant {
        state.withLock { $0.now }
    }

    /// Zero: a manual clock is exact.
    public var minimumResolution: Duration { .zero }

    /// Suspends until the clock has been advanced to `deadline`.
    ///
    /// Returns at once if `deadline` is not after ``now``.
    /// - Throws: `CancellationError` if the task is cancelled before the deadline; the
    ///   sleeper is then removed.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { $0.makeID() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, watchers): (Result<Void, any Error>?, [CheckedContinuation<Void, any Error>]) =
                    state.withLock {
                        if Task.isCancelled { return (.failure(CancellationError()), []) }
                        if deadline <= $0.now { return (.success(()), []) }
                        $0.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                        return (nil, $0.satisfiedWatchers())
                    }
                for watcher in watchers { watcher.resume() }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?
                .continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come,
    /// earliest first.
    ///
    /// - Returns: The number of sleepers woken.
    @discardableResult
    public func advance(by duration: Duration) -> Int {
        checkArgument(duration >= .zero, "ManualClock.advance(by:): duration must not be negative, got \(duration)")
        let due = state.withLock { $0.advance(to: $0.now.advanced(by: duration)) }
        for sleeper in due { sleeper.resume() }
        return due.count
    }

    /// Moves time forward to `instant` (never backwards) and wakes the sleepers now due.
    ///
    /// - Returns: The number of sleepers woken.
    @discardableResult
    public func advance(to instant: Instant) -> Int {
        let due = state.withLock { $0.advance(to: instant) }
        for sleeper in due { sleeper.resume() }
        return due.count
    }

    /// Moves time to the earliest deadline among the sleepers and wakes those due then.
    ///
    /// - Returns: The number of sleepers woken; `0` (time unchanged) if nobody is asleep.
    @discardableResult
    public func advanceToNextDeadline() -> Int {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard let next = state.sleepers.values.map(\.deadline).min() else { return [] }
            return state.advance(to: next)
        }
        for sleeper in due { sleeper.resume() }
        return due.count
    }

    /// The number of tasks asleep on the clock now.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// The deadlines of the tasks asleep on the clock now, earliest first. Empty at the end of
    /// a test that left nothing suspended.
    public var pendingSleepers: [Instant] {
        state.withLock { $0.sleepers.values.map(\.deadline).sorted() }
    }

    /// Suspends until at least `count` tasks are asleep on the clock.
    ///
    /// It wakes when a sleeper registers, without polling. `timeout` is a guard on the real
    /// clock, so a test whose code never sleeps fails instead of hanging CI; it is not a
    /// timing assertion.
    ///
    /// - Throws: ``ManualClockError`` if `count` sleepers are not there within `timeout`,
    ///   or `CancellationError`.
    public func waitForSleepers(_ count: Int, timeout: Duration = .seconds(30)) async throws {
        let id = state.withLock { $0.makeID() }
        let registered: @Sendable () async throws -> Void = { [state] in
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let outcome: Result<Void, any Error>? = state.withLock {
                        if $0.sleepers.count >= count { return .success(()) }
                        if Task.isCancelled { return .failure(CancellationError()) }
                        $0.watchers[id] = Watcher(count: count, continuation: continuation)
                        return nil
                    }
                    if let outcome { continuation.resume(with: outcome) }
                }
            } onCancel: {
                state.withLock { $0.watchers.removeValue(forKey: id) }?
                    .continuation.resume(throwing: CancellationError())
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(operation: registered)
            group.addTask { [state] in
                try await Task.sleep(for: timeout)
                let found = state.withLock { $0.sleepers.count }
                throw ManualClockError(expectedSleepers: count, foundSleepers: found, timeout: timeout)
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// Thrown by ``ManualClock/waitForSleepers(_:timeout:)`` when the expected sleepers never
/// registered: the code under test did not reach the point where it sleeps.
public struct ManualClockError: Error, CustomStringConvertible {
    /// How many sleepers the test waited for.
    public var expectedSleepers: Int
    /// How many were sleeping when the wait gave up.
    public var foundSleepers: Int
    /// How long the wait lasted.
    public var timeout: Duration

    /// Says how many sleepers were expected and found.
    public var description: String {
        "ManualClock: waited \(timeout) (real time) for \(expectedSleepers) sleeper(s), found \(foundSleepers)"
    }
}
