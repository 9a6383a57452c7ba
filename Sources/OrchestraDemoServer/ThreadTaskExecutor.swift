import Foundation

/// A task executor with threads of its own: the jobs of the tasks that prefer it run there, in
/// the order they were enqueued (one at a time with one thread).
///
/// Swift concurrency's cooperative pool has one thread per core. A process whose tasks compute
/// for seconds without suspending holds them all that time, and every other task of the process
/// waits: in a full `swift test` on two cores, a demo server embedded in the test process stopped
/// answering for 28 s while synchronous tests held the pool, and its clients' requests timed out.
/// On an executor of its own, a server's handlers (or a test's jobs) are neither in the pool's way
/// nor behind its queue: the kernel shares the cores between its threads and the pool's, as it
/// shares them between processes.
///
/// Used by the demo server (``DemoServer/Configuration/threads``) and by the tests' `.ownThread`.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
package final class ThreadTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var stopping = false
    private var liveThreads: Int

    /// Starts `threads` (at least 1) threads, each named `name` (shown by a debugger; at most 15
    /// bytes on Linux, where a longer one leaves the thread its parent's).
    package init(name: String, threads: Int = 1) {
        let threads = max(1, threads)
        liveThreads = threads
        for _ in 0..<threads {
            // Named from the thread itself: on Linux a name set before `start()` is not the
            // thread's (it keeps its parent's).
            Thread.detachNewThread { [self] in
                Thread.current.name = name
                Thread.current.threadDictionary[Self.markerKey] = true
                drain()
            }
        }
    }

    private static let markerKey = "ThreadTaskExecutor"

    /// Whether the calling thread is a thread of a ``ThreadTaskExecutor``.
    package static func isOnAnExecutorThread() -> Bool {
        Thread.current.threadDictionary[markerKey] as? Bool == true
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if liveThreads > 0 {
            jobs.append(job)
            condition.signal()
            condition.unlock()
        } else {
            // A job of a task that outlived the executor (a continuation resumed late): run on a
            // thread of its own rather than never.
            condition.unlock()
            let executor = asUnownedTaskExecutor()
            Thread.detachNewThread { job.runSynchronously(on: executor) }
        }
    }

    /// Lets the threads end once the queue is empty; with `waiting`, returns once they have (a
    /// synchronous wait: not from one of its jobs).
    package func stop(waiting: Bool = false) {
        condition.lock()
        stopping = true
        condition.broadcast()
        while waiting && liveThreads > 0 { condition.wait() }
        condition.unlock()
    }

    private func drain() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while next == jobs.count && !stopping { condition.wait() }
            if next == jobs.count {
                liveThreads -= 1
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
}
