import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

extension TaskGraph {
    /// A graph whose nodes are `operations`, their `addDependency` links its edges: run it with
    /// `run(limit:)` instead of an `OperationQueue`, and the dependencies and the concurrency
    /// limit come from the graph, in linear time. (swift-corelibs-foundation's `OperationQueue`
    /// rescans every pending operation each time one finishes: a 10,000-operation chain takes
    /// about 7 s there.)
    ///
    /// ```swift
    /// let graph = try TaskGraph(operations: [fetch, parse, save])
    /// let result = try await graph.run(limit: 4)
    /// ```
    ///
    /// See ``addOperations(_:)`` for how each operation runs.
    public convenience init(operations: [Operation]) throws(TaskGraphError) {
        self.init()
        try addOperations(operations)
    }

    /// Adds operations as nodes; an operation's dependencies become the node's.
    ///
    /// - Node ids are the operations' names (which must then be unique), or for an operation
    ///   without a name, its type and address.
    /// - Each node starts its operation (`start()`, on the node's task: a synchronous
    ///   operation's `main()` runs there, as it would on a queue's thread) and ends when the
    ///   operation has finished. A ``ResultOperation``'s value becomes the node's value; an
    ///   ``AsyncOperation`` that finished with an error, and a cancelled operation, fail the
    ///   node, so their dependents are skipped (an `OperationQueue` would run them anyway).
    /// - Cancelling the node (or the run) cancels the operation.
    /// - An operation must not also be added to a queue.
    ///
    /// - Throws: `TaskGraphError`: `.unknownDependency` if an operation depends on one that is
    ///   not in `operations`; a cycle or self-dependency is reported by `validate()` and by
    ///   every run, with the operations' ids.
    public func addOperations(_ operations: [Operation]) throws(TaskGraphError) {
        // Read each operation's name and dependencies once (on corelibs both take locks and
        // `dependencies` copies an array), and hand the graph positions, not names to look up.
        let ids = operations.map(Self.nodeID(of:))
        var index: [ObjectIdentifier: Int] = [:]
        index.reserveCapacity(operations.count)
        for (position, operation) in operations.enumerated() where index[ObjectIdentifier(operation)] == nil {
            index[ObjectIdentifier(operation)] = position
        }
        // Check every dependency first, so a failure adds nothing. Operation `i`'s dependencies
        // are `dependencyList[dependencyStart[i] ..< dependencyStart[i + 1]]`.
        var dependencyStart: [Int] = [0]
        dependencyStart.reserveCapacity(operations.count + 1)
        var dependencyList: [Int] = []
        for (position, operation) in operations.enumerated() {
            for dependency in operation.dependencies {
                guard let target = index[ObjectIdentifier(dependency)] else {
                    let name = Self.nodeID(of: dependency)
                    throw TaskGraphError(
                        code: .unknownDependency,
                        message:
                            "operation \"\(ids[position])\" depends on \"\(name)\", which is not among the operations given",
                        path: [ids[position], name]
                    )
                }
                dependencyList.append(target)
            }
            dependencyStart.append(dependencyList.count)
        }
        let box = OperationBatch.OperationsBox(operations)
        addNodes(ids: ids, dependencyStart: dependencyStart, dependencyList: dependencyList) { position in
            try await OperationNode.run(box, position)
        }
    }

    static func nodeID(of operation: Operation) -> String {
        if let name = operation.name, !name.isEmpty { return name }
        return "\(type(of: operation))@\(String(UInt(bitPattern: ObjectIdentifier(operation).hashValue), radix: 16))"
    }
}

/// Runs one operation as a graph node.
enum OperationNode {
    /// The operation's failure as a node's.
    struct Failed: Error, CustomStringConvertible {
        let id: String
        let reason: String
        var description: String { "operation \"\(id)\" \(reason)" }
    }

    /// Runs `box.operations[position]` and returns its value (a ``ResultOperation``'s) or `()`.
    static func run(_ box: OperationBatch.OperationsBox, _ position: Int) async throws -> any Sendable {
        let operation = box.operations[position]
        if operation.isAsynchronous {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let operation = box.operations[position]
                    if let asynchronous = operation as? AsyncOperation {
                        asynchronous.whenFinished { continuation.resume() }
                        asynchronous.start()
                    } else {
                        let previous = operation.completionBlock
                        operation.completionBlock = {
                            previous?()
                            continuation.resume()
                        }
                        operation.start()
                    }
                }
            } onCancel: {
                box.operations[position].cancel()
            }
        } else {
            // A synchronous operation has finished when `start()` returns: no continuation.
            await withTaskCancellationHandler {
                box.operations[position].start()
            } onCancel: {
                box.operations[position].cancel()
            }
        }
        if let provider = operation as? any ResultProviding, let result = provider.anyResult {
            return try result.get()
        }
        if let asynchronous = operation as? AsyncOperation, let error = asynchronous.error {
            throw error
        }
        if operation.isCancelled { throw CancellationError() }
        return ()
    }
}
