import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

/// An operation that runs an async closure: async code on an `OperationQueue`, with its
/// dependencies and concurrency limit.
///
/// ```swift
/// let upload = TaskOperation { try await api.upload(file) }
/// upload.addDependency(compress)
/// queue.addOperation(upload)
/// let receipt = try await upload.value
/// ```
///
/// The task starts when the operation starts, with a priority mapped from the operation's
/// `qualityOfService` (or, left at its default, its `queuePriority`). `cancel()` cancels the
/// task; the operation finishes when the task ends, with its value or error. A closure that
/// ignores cancellation keeps the operation running until it returns; a
/// ``AsyncOperation/timeout`` then finishes it with a `TimeoutError` at once.
public final class TaskOperation<Success: Sendable>: ResultOperation<Success>, @unchecked Sendable {
    private let work: @Sendable () async throws -> Success
    private let task = Locked<Task<Void, Never>?>(nil)

    /// An operation that runs `work` in a task when the queue starts it, and finishes when `work` returns or throws.
    public init(_ work: @escaping @Sendable () async throws -> Success) {
        self.work = work
        super.init()
    }

    /// The task priority for this operation's quality of service and queue priority.
    public var taskPriority: TaskPriority {
        switch qualityOfService {
        case .userInteractive: return .high
        case .userInitiated: return .userInitiated
        case .utility: return .utility
        case .background: return .background
        case .default: break
        @unknown default: break
        }
        switch queuePriority {
        case .veryHigh, .high: return .high
        case .normal: return .medium
        case .low: return .low
        case .veryLow: return .background
        @unknown default: return .medium
        }
    }

    override public func execute() {
        let work = self.work
        // Unstructured on purpose: an Operation is started by a queue's thread, outside any
        // async scope. The task is kept, cancelled by `cancel()`, and finishes the operation.
        let task = Task(priority: taskPriority) { [self] in
            finish(with: await Result { try await work() })
        }
        self.task.withLock { $0 = task }
    }

    override public func executionCancelled() {
        task.withLock { $0 }?.cancel()
        // After a timeout, finish now: the task may ignore cancellation. After a plain
        // cancellation, the task's end finishes the operation.
        if isTimedOut { finish(error: nil) }
    }
}
