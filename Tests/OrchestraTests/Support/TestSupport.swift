import Orchestra
import Testing

/// A thread-safe log of events, in the order they happened.
final class EventLog<Event: Sendable>: Sendable {
    private let storage = Locked<[Event]>([])

    func append(_ event: Event) {
        storage.withLock { $0.append(event) }
    }

    var events: [Event] {
        storage.withLock { $0 }
    }

    var count: Int {
        storage.withLock { $0.count }
    }
}

/// Counts how many pieces of work run at once and remembers the maximum.
final class ConcurrencyProbe: Sendable {
    private let storage = Locked((current: 0, maximum: 0))

    func enter() {
        storage.withLock {
            $0.current += 1
            $0.maximum = max($0.maximum, $0.current)
        }
    }

    func leave() {
        storage.withLock { $0.current -= 1 }
    }

    var current: Int { storage.withLock { $0.current } }
    var maximum: Int { storage.withLock { $0.maximum } }

    func measure<T>(_ body: () async throws -> T) async rethrows -> T {
        enter()
        defer { leave() }
        return try await body()
    }
}

/// Waits (without a clock) until `condition` holds, re-checking after each yield. Bounded by a
/// real-time guard so a broken test fails instead of hanging CI; not a timing assertion.
func waitUntil(
    _ description: String,
    guard limit: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @escaping @Sendable () -> Bool
) async throws {
    do {
        try await withTimeout(limit) {
            while !condition() {
                try Task.checkCancellation()
                await Task.yield()
            }
        }
    } catch let error as TimeoutError {
        Issue.record("never happened: \(description) (\(error))", sourceLocation: sourceLocation)
        throw error
    }
}

/// Runs `body` under a real-time guard so a hang fails the test instead of blocking CI.
func withHangGuard<T: Sendable>(
    _ limit: Duration = .seconds(60),
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withTimeout(limit, body)
}

struct TestError: Error, Equatable, CustomStringConvertible {
    var name: String
    init(_ name: String) { self.name = name }
    var description: String { "TestError(\(name))" }
}
