/// Shares one execution among concurrent callers that ask for the same key.
///
/// Ten views asking for the same avatar at once cause one download; all ten get its image,
/// or its error:
///
/// ```swift
/// let avatars = SingleFlight<URL, Image>()
/// let image = try await avatars.run(key: url) { try await download(url) }
/// ```
///
/// A key is "in flight" from the first caller until the work ends; a caller that arrives after
/// that starts a new execution (results are not cached).
///
/// Cancellation: a cancelled caller stops waiting at once with `CancellationError`; the work
/// goes on for the others. Only when every caller for the key has left is the work cancelled,
/// and the next caller starts afresh.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let storage = Locked(SingleFlightStateMachine<Key, Value>())

    /// A single-flight with nothing in flight.
    public init() {}

    /// Returns the result of `operation` for `key`, running it only if no execution for `key`
    /// is in flight.
    ///
    /// - Parameters:
    ///   - key: Callers with equal keys share an execution.
    ///   - priority: The priority of the task that runs the work, if this call starts it.
    ///   - operation: The work; runs in its own task, because it must outlive any one caller.
    /// - Throws: The error of the shared execution, or `CancellationError` if this caller is
    ///   cancelled while it waits.
    public func run(
        key: Key,
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let id = storage.withLock { $0.makeID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let action = storage.withLock {
                    $0.join(key: key, id: id, continuation: continuation, isCancelled: Task.isCancelled)
                }
                switch action {
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .joined:
                    break
                case .start(let generation):
                    start(key: key, generation: generation, priority: priority, operation: operation)
                }
            }
        } onCancel: {
            let (waiter, task) = storage.withLock { $0.leave(key: key, id: id) }
            waiter?.resume(throwing: CancellationError())
            task?.cancel()
        }
    }

    /// The number of keys with work in flight now.
    public var keysInFlight: Int {
        storage.withLock { $0.keysInFlight }
    }

    /// The number of callers waiting for `key` now.
    public func waiterCount(for key: Key) -> Int {
        storage.withLock { $0.waiterCount(for: key) }
    }

    private func start(
        key: Key,
        generation: UInt64,
        priority: TaskPriority?,
        operation: @escaping @Sendable () async throws -> Value
    ) {
        // An unstructured task is required: the work is shared by callers that come and go,
        // so no single caller's task may own it. It is cancelled when the last caller leaves.
        let task = Task(priority: priority) { [storage] in
            let result = await Result { try await operation() }
            for waiter in storage.withLock({ $0.finish(key: key, generation: generation) }) {
                waiter.resume(with: result)
            }
        }
        storage.withLock { $0.attach(task, key: key, generation: generation) }?.cancel()
    }
}
