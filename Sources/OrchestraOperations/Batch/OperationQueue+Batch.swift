import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

extension OperationQueue {
    /// Adds operations and calls `completion` once, when every one of them has finished, with
    /// each one's outcome in the order given: `dispatch_group_notify`, for
    /// operations.
    ///
    /// ```swift
    /// queue.addOperations(downloads, completionQueue: .main) { outcomes in
    ///     report(outcomes.filter { !$0.succeeded })
    /// }
    /// ```
    ///
    /// It chains each operation's `completionBlock` (a block already set still runs first): do
    /// not replace an operation's `completionBlock` after adding it, or `completion` never
    /// runs. Cancelled operations finish too, so `queue.cancelAllOperations()` still ends the
    /// batch (with `.cancelled` outcomes). An empty batch completes at once.
    ///
    /// - Parameters:
    ///   - operations: The operations; their dependencies are kept (check them first with
    ///     ``addOperationsCheckingDependencies(_:waitUntilFinished:)`` or
    ///     `validateDependencies()`).
    ///   - completionQueue: Where `completion` runs; the main queue by default.
    ///   - completion: Receives every operation's outcome.
    public func addOperations(
        _ operations: [Operation],
        completionQueue: DispatchQueue = .main,
        completion: @escaping @Sendable ([OperationOutcome]) -> Void
    ) {
        OperationBatch.whenAllFinished(operations) { outcomes in
            completionQueue.async { completion(outcomes) }
        }
        addOperations(operations, waitUntilFinished: false)
    }

    /// Adds operations and waits, without blocking a thread, until every one has finished;
    /// returns each one's outcome in the order given, in the caller's isolation.
    ///
    /// Cancellation: cancelling the waiting task cancels the operations, then still waits for
    /// them to finish (an ``AsyncOperation`` finishes at once when cancelled), so nothing is
    /// left running.
    public func addOperationsAndWait(_ operations: [Operation]) async -> [OperationOutcome] {
        let box = OperationBatch.OperationsBox(operations)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[OperationOutcome], Never>) in
                OperationBatch.whenAllFinished(box.operations) { continuation.resume(returning: $0) }
                addOperations(box.operations, waitUntilFinished: false)
            }
        } onCancel: {
            for operation in box.operations { operation.cancel() }
        }
    }
}

enum OperationBatch {
    /// Operations are thread-safe objects; this box only carries the array across the
    /// cancellation handler's boundary.
    struct OperationsBox: @unchecked Sendable {
        let operations: [Operation]
        init(_ operations: [Operation]) { self.operations = operations }
    }

    /// Calls `body` once, when every operation has finished, with their outcomes in order.
    static func whenAllFinished(_ operations: [Operation], _ body: @escaping @Sendable ([OperationOutcome]) -> Void) {
        let box = OperationsBox(operations)
        guard !operations.isEmpty else {
            body([])
            return
        }
        let remaining = Locked(operations.count)
        let done: @Sendable () -> Void = {
            let last = remaining.withLock { count -> Bool in
                count -= 1
                return count == 0
            }
            if last { body(box.operations.map(OperationOutcome.init(of:))) }
        }
        for operation in operations {
            if operation.isFinished {
                done()
            } else if let asynchronous = operation as? AsyncOperation {
                asynchronous.whenFinished(done)
            } else {
                let previous = operation.completionBlock
                operation.completionBlock = {
                    previous?()
                    done()
                }
            }
        }
    }
}
