import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

/// How one operation ended.
public struct OperationOutcome: Sendable, CustomStringConvertible {
    /// How the operation ended.
    public enum State: Sendable, CustomStringConvertible {
        /// It finished without an error (for a ``ResultOperation``, with a value).
        case succeeded
        /// It finished with an error: an ``AsyncOperation``'s ``AsyncOperation/error`` (a
        /// `TimeoutError` when it timed out).
        case failed(any Error)
        /// It was cancelled.
        case cancelled

        /// `succeeded`, `failed: …` or `cancelled`.
        public var description: String {
            switch self {
            case .succeeded: "succeeded"
            case .failed(let error): "failed: \(error)"
            case .cancelled: "cancelled"
            }
        }
    }

    /// The operation.
    public let operation: Operation
    /// How it ended.
    public let state: State

    /// The outcome of a finished operation.
    public init(of operation: Operation) {
        self.operation = operation
        if let asynchronous = operation as? AsyncOperation, let error = asynchronous.error {
            state = error is CancellationError ? .cancelled : .failed(error)
        } else {
            state = operation.isCancelled ? .cancelled : .succeeded
        }
    }

    /// Whether it finished without an error and was not cancelled.
    public var succeeded: Bool {
        if case .succeeded = state { return true }
        return false
    }

    /// The operation's name and how it ended.
    public var description: String {
        "\(OperationDependencyCheck.name(of: operation)): \(state)"
    }
}

/// Type-erased access to a ``ResultOperation``'s result, for the graph bridge.
protocol ResultProviding: Operation {
    var anyResult: Result<any Sendable, any Error>? { get }
}

extension ResultOperation: ResultProviding {
    var anyResult: Result<any Sendable, any Error>? {
        result.map { $0.map { $0 as any Sendable } }
    }
}
