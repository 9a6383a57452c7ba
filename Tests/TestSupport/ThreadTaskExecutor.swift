import Foundation
import OrchestraDemoServer
import Testing

extension ThreadTaskExecutor {
    /// The name of the threads of `.ownThread` tests (a debugger shows it; Linux keeps 15 bytes).
    package static let testThreadName = "test-own-thread"

    /// Runs `body` in a child task that starts on a thread of its own and keeps it as its
    /// preferred executor (so do the child tasks it starts), then lets the thread end.
    ///
    /// A child task, not `withTaskExecutorPreference` alone: that moves a task only at its next
    /// suspension, and a body that computes without suspending would stay on the pool.
    package static func withOwnThread<T: Sendable>(
        name: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let executor = ThreadTaskExecutor(name: name)
        defer { executor.stop() }
        // The group ends before this returns: the body does not outlive the call.
        return try await withoutActuallyEscaping(body) { body in
            try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask(executorPreference: executor) { try await body() }
                return try await group.next()!
            }
        }
    }
}

/// Runs each test case of the test or suite it marks on a thread of its own
/// (``ThreadTaskExecutor``), off Swift concurrency's cooperative pool: for a test that computes
/// for seconds without suspending (it no longer holds one of the pool's few threads), and for
/// a test that awaits thousands of times in a row (its jobs no longer wait behind the pool's
/// queue, which every other test fills).
///
/// ```swift
/// @Test(.ownThread) func aLargeParse() throws { … }
/// ```
package struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // Each test case, not the suite around them.
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await ThreadTaskExecutor.withOwnThread(name: ThreadTaskExecutor.testThreadName) { try await function() }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test case on a thread of its own, off the cooperative pool (``OwnThreadTrait``).
    package static var ownThread: Self { OwnThreadTrait() }
}
