import Orchestra

/// A thread-safe log of events, in the order they happened: record from any task or thread,
/// then assert on the order.
public final class EventLog<Event: Sendable>: Sendable {
    private let storage = Locked<[Event]>([])

    /// An empty log.
    public init() {}

    /// Records `event`, from any task.
    public func append(_ event: Event) {
        storage.withLock { $0.append(event) }
    }

    /// Everything recorded so far, in order.
    public var events: [Event] {
        storage.withLock { $0 }
    }

    /// How many events were recorded.
    public var count: Int {
        storage.withLock { $0.count }
    }
}

/// Counts how many pieces of work run at once and remembers the maximum, to check a
/// concurrency limit.
public final class ConcurrencyProbe: Sendable {
    private let storage = Locked((current: 0, maximum: 0))

    /// A counter at zero.
    public init() {}

    /// Counts one more in progress and updates the maximum.
    public func enter() {
        storage.withLock {
            $0.current += 1
            $0.maximum = max($0.maximum, $0.current)
        }
    }

    /// Counts one fewer in progress.
    public func leave() {
        storage.withLock { $0.current -= 1 }
    }

    /// How many are in progress now.
    public var current: Int { storage.withLock { $0.current } }
    /// The most that were in progress at once.
    public var maximum: Int { storage.withLock { $0.maximum } }

    /// Runs `body` counted as one piece of work.
    public func measure<T>(_ body: () async throws -> T) async rethrows -> T {
        enter()
        defer { leave() }
        return try await body()
    }
}

/// A condition a test waited for never held within its real-time guard.
public struct NeverHappened: Error, CustomStringConvertible {
    /// What the test waited for.
    public var what: String
    /// `never happened: …`.
    public var description: String { "never happened: \(what)" }
}

/// Waits (without a clock) until `condition` holds: re-checked after each yield at first
/// (most conditions hold within a few), then every millisecond, so a condition that never
/// holds does not keep a core busy until the guard.
///
/// Bounded by a real-time guard so a broken test fails with ``NeverHappened`` instead of
/// hanging CI; this is not a timing assertion (the guard is far longer than any correct run).
///
/// - Throws: ``NeverHappened`` naming `description` when the guard expires;
///   `CancellationError` if the waiting task is cancelled.
public func waitUntil(
    _ description: String,
    guard limit: Duration = .seconds(30),
    _ condition: @escaping @Sendable () -> Bool
) async throws {
    do {
        try await withTimeout(limit) {
            var checks = 0
            while !condition() {
                try Task.checkCancellation()
                checks += 1
                if checks < 1_000 {
                    await Task.yield()
                } else {
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
        }
    } catch is TimeoutError {
        throw NeverHappened(what: description)
    }
}

/// Runs `body` under a real-time guard so a hang fails the test (with a `TimeoutError`)
/// instead of blocking CI.
public func withHangGuard<T: Sendable>(
    _ limit: Duration = .seconds(60),
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withTimeout(limit, body)
}
