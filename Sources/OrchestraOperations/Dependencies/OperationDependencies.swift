import Orchestra

#if canImport(Darwin)
import Foundation
#else
@preconcurrency import Foundation
#endif

// Dependency checks that run before Foundation sees the operations. swift-corelibs-foundation
// deadlocks inside `addDependency` when an operation is made to depend on itself (measured:
// `a.addDependency(a)` never returns), and a queue whose operations form a cycle never runs
// them and never says so: `waitUntilAllOperationsAreFinished()` hangs. Darwin's Foundation
// hangs on a cycle too. These checks refuse both with a `TaskGraphError` naming the operations.

extension Sequence where Element: Operation {
    /// Checks the operations' dependencies (and the dependencies of those, transitively) for
    /// cycles and self-dependencies, before any queue sees them.
    ///
    /// - Throws: `TaskGraphError` with code `.selfDependency` naming the operation, or
    ///   `.cycle` with the path, e.g. `a → b → c → a` (each operation followed by one that
    ///   depends on it), using the operations' names.
    /// - Complexity: O(operations + dependencies).
    public func validateDependencies() throws(TaskGraphError) {
        try OperationDependencyCheck.validate(Array(self))
    }
}

extension Operation {
    /// Adds a dependency after checking that it is not this operation and does not close a
    /// cycle: `addDependency(_:)` deadlocks on the first on Linux and hangs a queue on the
    /// second.
    ///
    /// - Throws: `TaskGraphError` (`.selfDependency`, or `.cycle` with the path the new
    ///   dependency would close); the dependency is then not added.
    /// - Complexity: O(operations reachable from `operation` through dependencies).
    public func addDependencyChecked(_ operation: Operation) throws(TaskGraphError) {
        if operation === self {
            let name = OperationDependencyCheck.name(of: self)
            throw TaskGraphError(
                code: .selfDependency, message: "operation \(name) cannot depend on itself", path: [name])
        }
        // A cycle closes if `self` is among what `operation` already (transitively) waits for.
        if let path = OperationDependencyCheck.dependencyPath(from: operation, to: self) {
            // path: operation → … → self along "depends on"; in run order: self → … → operation → self.
            let names =
                path.reversed().map(OperationDependencyCheck.name(of:)) + [OperationDependencyCheck.name(of: self)]
            throw TaskGraphError(
                code: .cycle,
                message:
                    "making \(OperationDependencyCheck.name(of: self)) depend on \(OperationDependencyCheck.name(of: operation)) would close a cycle: \(names.joined(separator: " → "))",
                path: names
            )
        }
        addDependency(operation)
    }
}

extension OperationQueue {
    /// Validates the operations' dependencies (see
    /// `Sequence.validateDependencies()`), then adds them.
    ///
    /// - Throws: `TaskGraphError` for a cycle or a self-dependency; then nothing is added.
    public func addOperationsCheckingDependencies(
        _ operations: [Operation], waitUntilFinished wait: Bool = false
    ) throws(TaskGraphError) {
        try operations.validateDependencies()
        addOperations(operations, waitUntilFinished: wait)
    }
}

enum OperationDependencyCheck {
    static func name(of operation: Operation) -> String {
        if let name = operation.name, !name.isEmpty { return "\"\(name)\"" }
        return "\(type(of: operation))@\(String(UInt(bitPattern: ObjectIdentifier(operation).hashValue), radix: 16))"
    }

    /// Iterative depth-first search over "depends on" edges, colouring nodes; a grey node met
    /// again closes a cycle.
    static func validate(_ roots: [Operation]) throws(TaskGraphError) {
        enum Colour { case grey, black }
        var colour: [ObjectIdentifier: Colour] = [:]
        for root in roots where colour[ObjectIdentifier(root)] == nil {
            // Each frame: the operation and its dependencies still to visit.
            var stack: [(operation: Operation, pending: [Operation])] = [(root, root.dependencies)]
            colour[ObjectIdentifier(root)] = .grey
            while !stack.isEmpty {
                guard let next = stack[stack.count - 1].pending.popLast() else {
                    colour[ObjectIdentifier(stack.removeLast().operation)] = .black
                    continue
                }
                let current = stack[stack.count - 1].operation
                if next === current {
                    let name = name(of: current)
                    throw TaskGraphError(
                        code: .selfDependency, message: "operation \(name) depends on itself", path: [name])
                }
                switch colour[ObjectIdentifier(next)] {
                case .black:
                    continue
                case .grey:
                    // From `next` up to `current` the stack follows "depends on" edges, and
                    // `current` depends on `next`: reversed, the ring reads in run order.
                    let start = stack.firstIndex { $0.operation === next }!
                    let chain = stack[start...].map { name(of: $0.operation) } + [name(of: next)]
                    let ring = Array(chain.reversed())
                    throw TaskGraphError(
                        code: .cycle,
                        message: "the operations' dependencies form a cycle: \(ring.joined(separator: " → "))",
                        path: ring
                    )
                case nil:
                    colour[ObjectIdentifier(next)] = .grey
                    stack.append((next, next.dependencies))
                }
            }
        }
    }

    /// A path from `start` to `target` following "depends on" edges (both included), if any.
    static func dependencyPath(from start: Operation, to target: Operation) -> [Operation]? {
        var parent: [ObjectIdentifier: Operation] = [:]
        var seen: Set<ObjectIdentifier> = [ObjectIdentifier(start)]
        var queue: [Operation] = [start]
        var head = 0
        while head < queue.count {
            let operation = queue[head]
            head += 1
            if operation === target {
                var path = [operation]
                var node = operation
                while let up = parent[ObjectIdentifier(node)] {
                    path.append(up)
                    node = up
                }
                return path.reversed()
            }
            for dependency in operation.dependencies where seen.insert(ObjectIdentifier(dependency)).inserted {
                parent[ObjectIdentifier(dependency)] = operation
                queue.append(dependency)
            }
        }
        return nil
    }
}
