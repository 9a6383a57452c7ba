import Foundation
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

/// Waits (without a clock) until `condition` holds: re-checked after each of its first 50 yields
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
    try await waitUntil(description, guard: limit, asking: { condition() })
}

/// Waits as ``waitUntil(_:guard:_:)`` does until `condition`, which asks something outside the
/// process (a server's state, say), holds; an error it throws ends the wait.
///
/// - Throws: ``NeverHappened`` naming `description` when the guard expires; `condition`'s
///   errors; `CancellationError` if the waiting task is cancelled.
public func waitUntil(
    _ description: String,
    guard limit: Duration = .seconds(30),
    asking condition: @escaping @Sendable () async throws -> Bool
) async throws {
    do {
        try await withTimeout(limit) {
            var checks = 0
            while try await !condition() {
                try Task.checkCancellation()
                checks += 1
                if checks < 50 {
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

/// The work under ``withHangGuard(_:clock:_:)`` gave no result within its guard.
public struct HangGuardExpired: Error, CustomStringConvertible {
    /// The guard that expired.
    public var limit: Duration
    /// `no result within 60 seconds: …`.
    public var description: String {
        "no result within \(limit): the guarded work hangs (it was cancelled and left behind)"
    }
}

/// Runs `body` under a real-time guard so a hang fails the test with ``HangGuardExpired``
/// instead of blocking CI.
///
/// The guard gives up by itself: when `limit` passes it cancels `body` and returns at once,
/// even if `body` ignores cancellation (awaiting another task's `value`, a blocking wait);
/// such a body is left behind. This is not a timing assertion: the guard is far longer than
/// any correct run.
///
/// - Parameters:
///   - limit: How long `body` may take; 60 seconds by default.
///   - clock: The clock the guard waits on: real time by default (a `ManualClock` only to
///     test the guard itself).
///   - body: The work.
/// - Throws: What `body` throws; ``HangGuardExpired`` when the guard expires first;
///   `CancellationError` if the calling task is cancelled first (`body` is cancelled too).
public func withHangGuard<T: Sendable>(
    _ limit: Duration = .seconds(60),
    clock: some Clock<Duration> = ContinuousClock(),
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = HangGuardRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.install(continuation)
            // Unstructured on purpose: a task group would wait for a body that ignores
            // cancellation, which is the hang this guard exists to report.
            race.add(Task { race.finish(await Result { try await body() }) })
            race.add(
                Task {
                    try? await clock.sleep(for: limit)
                    race.finish(.failure(HangGuardExpired(limit: limit)))
                })
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// The result of ``withHangGuard(_:clock:_:)``: the first of the body and the guard to finish wins,
/// resumes the caller and cancels the other.
private final class HangGuardRace<T: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            if state.result == nil { state.continuation = continuation }
            return state.result
        }
        if let ready { continuation.resume(with: ready) }
    }

    func add(_ task: Task<Void, Never>) {
        let finished = state.withLock { state in
            if state.result == nil { state.tasks.append(task) }
            return state.result != nil
        }
        if finished { task.cancel() }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, tasks) = state.withLock {
            state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>]) in
            guard state.result == nil else { return (nil, []) }
            state.result = result
            defer { (state.continuation, state.tasks) = (nil, []) }
            return (state.continuation, state.tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
    }
}

/// Whether tests that expect a process to crash (`#expect(processExitsWith:)`) run: always,
/// unless `ORCHESTRA_SKIP_EXIT_TESTS` is set, as CI's ThreadSanitizer pass sets it. Each exit
/// test starts the whole test binary again; under the sanitizer two dozen of them at once
/// starve the other tests of a two-core machine for a minute, and a trap checks nothing the
/// sanitizer looks at. The plain pass runs them. Use as `@Test(.enabled(if: ExitTests.areEnabled))`.
public enum ExitTests {
    /// `false` when `ORCHESTRA_SKIP_EXIT_TESTS` is set in the environment.
    public static var areEnabled: Bool {
        ProcessInfo.processInfo.environment["ORCHESTRA_SKIP_EXIT_TESTS"] == nil
    }
}
