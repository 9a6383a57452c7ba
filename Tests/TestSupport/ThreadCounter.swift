import Foundation

/// A count that threads raise and wait for, for the tests that block a thread on purpose (a
/// thread of their own, or the pool's to fill it): every wait is bounded and says whether the
/// count was reached. Not for tasks that can await: they use `AsyncEvent` and `waitUntil`.
///
/// ```swift
/// let gate = ThreadCounter()
/// // on the blocked thread:
/// gate.wait(untilAtLeast: 1, seconds: 10)
/// // to let it go:
/// gate.add()
/// ```
package final class ThreadCounter: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var count = 0

    package init() {}

    /// Raises the count by `amount` and wakes the threads waiting for it.
    package func add(_ amount: Int = 1) {
        condition.lock()
        count += amount
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks the calling thread until the count is at least `target`, for at most `seconds`;
    /// whether it is.
    @discardableResult
    package func wait(untilAtLeast target: Int, seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while count < target {
            if !condition.wait(until: deadline) { return count >= target }
        }
        return true
    }
}
