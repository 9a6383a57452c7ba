import Foundation
import Testing

/// Lets a few suites run at once, and the others wait their turn before their first test
/// starts.
///
/// Swift Testing starts every test of the run at once. On a machine of two cores, 770 tests
/// then share the cores and the cooperative pool, each progressing at a few hundredths of its
/// speed: a test that takes a second alone took 50 to 70 seconds in a full `swift test` and
/// failed its one-minute limit at random (5 tests in the CI run of 2026-11-27). With a few
/// suites at a time each test keeps most of its speed, and the whole run takes no longer: the
/// cores were as busy either way.
///
/// A suite waits before its tests start, so the wait does not count against their time limits
/// (which apply to each test). A suite inside one that has its turn runs at once.
///
/// `ORCHESTRA_TEST_SUITES_AT_ONCE` sets how many suites run at once (default: three per core,
/// at least six).
package struct TakesTurnsTrait: SuiteTrait, TestScoping {
    package var isRecursive: Bool { false }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if SuiteTurns.hasTurn {
            try await function()
            return
        }
        await SuiteTurns.shared.wait()
        defer { SuiteTurns.shared.signal() }
        try await SuiteTurns.$hasTurn.withValue(true) { try await function() }
    }
}

extension Trait where Self == TakesTurnsTrait {
    /// The suite waits for its turn among the suites running at once (``TakesTurnsTrait``).
    package static var takesTurns: Self { TakesTurnsTrait() }
}

/// The turns of ``TakesTurnsTrait``: a counting semaphore whose waiters are served in order.
///
/// Not Orchestra's `AsyncSemaphore` on purpose: the tests schedule themselves with it, and a
/// defect in the code under test must fail its tests, not stop every suite from starting.
package final class SuiteTurns: @unchecked Sendable {
    /// Whether the current task is inside a suite that has its turn.
    @TaskLocal package static var hasTurn = false

    /// How many suites run at once.
    package static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["ORCHESTRA_TEST_SUITES_AT_ONCE"], let width = Int(text),
            width > 0
        {
            return width
        }
        return max(6, 3 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    package static let shared = SuiteTurns(width: width)

    // Guarded by `lock`.
    private let lock = NSLock()
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var nextWaiter = 0

    package init(width: Int) {
        free = width
    }

    /// Returns once a turn is free, taking it.
    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if free > 0 {
                free -= 1
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    /// How many wait for a turn.
    package var waiting: Int {
        lock.lock()
        defer { lock.unlock() }
        return waiters.count - nextWaiter
    }

    /// Gives a turn back, to the first waiter if there is one.
    package func signal() {
        lock.lock()
        if nextWaiter < waiters.count {
            let waiter = waiters[nextWaiter]
            nextWaiter += 1
            if nextWaiter == waiters.count {
                waiters.removeAll()
                nextWaiter = 0
            }
            lock.unlock()
            waiter.resume()
        } else {
            free += 1
            lock.unlock()
        }
    }
}
