import Foundation
import Testing

/// A task executor with one thread of its own: the jobs of the tasks that prefer it run there,
/// one at a time, in the order they were enqueued.
///
/// Swift concurrency's cooperative pool has one thread per core. In a full `swift test` on two
/// cores, a test that computes for seconds without suspending (a 20,000-element parse, a cookie
/// flood, a mutated workflow parsed a thousand times) holds one of them all that time, and a test
/// that awaits a few thousand times in a row (a timer, a graph run, a batch) waits behind every
/// job in the pool's queue at each of its awaits. Both then take tens of times longer than alone
/// and fail their time limits at random. On an executor of its own, a test's jobs are neither in
/// the pool's way nor behind its queue: the kernel shares the cores between its thread and the
/// pool's, as it shares them between processes.
package final class ThreadTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var stopping = false
    private var running = true

    /// The name of the threads of `.ownThread` tests (a debugger shows it; Linux keeps 15 bytes).
    package static let testThreadName = "test-own-thread"

    /// Starts the executor's thread, named `name` (shown by a debugger; at most 15 bytes on
    /// Linux, where a longer one leaves the thread its parent's).
    package init(name: String) {
        // Named from the thread itself: on Linux a name set before `start()` is not the
        // thread's (it keeps its parent's).
        Thread.detachNewThread { [self] in
            Thread.current.name = name
            Thread.current.threadDictionary[Self.markerKey] = true
            drain()
        }
    }

    private static let markerKey = "ThreadTaskExecutor"

    /// Whether the calling thread is the thread of a ``ThreadTaskExecutor``.
    package static func isOnAnExecutorThread() -> Bool {
        Thread.current.threadDictionary[markerKey] as? Bool == true
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if running {
            jobs.append(job)
            condition.broadcast()
            condition.unlock()
        } else {
            // A job of a task that outlived its test (a continuation resumed late): run on a
            // thread of its own rather than never.
            condition.unlock()
            let executor = asUnownedTaskExecutor()
            Thread.detachNewThread { job.runSynchronously(on: executor) }
        }
    }

    /// Lets the thread end once its queue is empty; with `waiting`, returns once it has (a
    /// synchronous wait: for a test of this executor, not from a job).
    package func stop(waiting: Bool = false) {
        condition.lock()
        stopping = true
        condition.broadcast()
        while waiting && running { condition.wait() }
        condition.unlock()
    }

    private func drain() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while next == jobs.count && !stopping { condition.wait() }
            if next == jobs.count {
                running = false
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }

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
