/// Runs a batch stream: the driver task that starts items, and the consumer's `next()`.
///
/// The driver is an unstructured task because an `AsyncIterator` cannot own a task group
/// across `next()` calls. Each item still runs in its own child task of the driver's one task
/// group; the driver is cancelled as soon as the iterator is dropped or its consumer is
/// cancelled, which cancels every running item and starts nothing new.
final class BatchStreamStorage<Output: Sendable>: Sendable {
    typealias Machine = BatchStreamStateMachine<Output>

    private let state: Locked<Machine>

    init(order: Machine.Order, capacity: Int) {
        state = Locked(Machine(order: order, capacity: capacity))
    }

    /// Starts the driver on the first `next()`.
    func startIfNeeded<Base: Sequence & Sendable>(
        base: Base,
        limit: Int,
        transform: @escaping @Sendable (Base.Element) async throws -> Output
    ) where Base.Element: Sendable {
        guard state.withLock({ $0.isIdle }) else { return }
        // Unstructured on purpose: see the type's documentation. It inherits the consumer's
        // priority and task-local values, and is cancelled by `terminate()`.
        let task = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                var inFlight = 0
                var index = 0
                for element in base {
                    guard await waitForSlot() else { break }
                    if inFlight == limit {
                        await group.next()
                        inFlight -= 1
                    }
                    let position = index
                    index += 1
                    group.addTask {
                        let result = await Result { try await transform(element) }
                        self.deliver((position, result))
                    }
                    inFlight += 1
                }
                for await _ in group {}
            }
            state.withLock { $0.driverFinished() }?.resume(returning: nil)
        }
        state.withLock { $0.started(task) }?.cancel()
    }

    /// The driver waits until it may start another item; `false` means stop.
    private func waitForSlot() async -> Bool {
        switch state.withLock({ $0.reserveSlot() }) {
        case .proceed: return true
        case .stop: return false
        case .suspend: break
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Machine.DriverContinuation) in
                if let now = state.withLock({ $0.suspendDriver(continuation, isCancelled: Task.isCancelled) }) {
                    continuation.resume(returning: now)
                }
            }
        } onCancel: {
            state.withLock { $0.cancelDriverWait() }?.resume(returning: false)
        }
    }

    private func deliver(_ item: Machine.Item) {
        if let handoff = state.withLock({ $0.deliver(item) }) {
            handoff.driver?.resume(returning: true)
            handoff.consumer.resume(returning: handoff.item)
        }
    }

    /// The consumer's `next()`: the next item in the stream's order, or `nil` at the end or
    /// when the consuming task is cancelled (which also stops the batch).
    func next(isolation: isolated (any Actor)?) async -> Machine.Item? {
        switch state.withLock({ $0.next() }) {
        case .deliver(let item, let driver):
            driver?.resume(returning: true)
            return item
        case .end:
            return nil
        case .suspend:
            break
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: isolation) { (continuation: Machine.ConsumerContinuation) in
                let (action, task) = state.withLock {
                    $0.suspendConsumer(continuation, isCancelled: Task.isCancelled)
                }
                task?.cancel()
                switch action {
                case .deliver(let item, let driver):
                    driver?.resume(returning: true)
                    continuation.resume(returning: item)
                case .end:
                    continuation.resume(returning: nil)
                case .suspend:
                    break
                }
            }
        } onCancel: {
            terminate()
        }
    }

    /// Stops the batch: cancels the driver (and with it every running item) and ends the
    /// stream for the consumer.
    func terminate() {
        let (task, consumer, driver) = state.withLock { $0.terminate() }
        task?.cancel()
        consumer?.resume(returning: nil)
        driver?.resume(returning: false)
    }
}

/// Owned by an iterator: dropping the iterator stops the batch.
final class BatchStreamHandle<Output: Sendable>: Sendable {
    let storage: BatchStreamStorage<Output>

    init(_ storage: BatchStreamStorage<Output>) {
        self.storage = storage
    }

    deinit {
        storage.terminate()
    }
}

/// What a batch stream runs: the inputs, the limits and the work for one element.
struct BatchStreamSource<Base: Sequence & Sendable, Output: Sendable>: Sendable where Base.Element: Sendable {
    let base: Base
    let limit: Int
    let buffer: Int
    let transform: @Sendable (Base.Element) async throws -> Output

    init(
        base: Base, limit: Int, buffer: Int, function: StaticString,
        transform: @escaping @Sendable (Base.Element) async throws -> Output
    ) {
        checkArgument(limit >= 1, "\(function): limit must be at least 1, got \(limit)")
        checkArgument(buffer >= 0, "\(function): buffer must be 0 or more, got \(buffer)")
        self.base = base
        self.limit = limit
        self.buffer = buffer
        self.transform = transform
    }
}

/// The shared part of the batch streams' iterators: starts the driver on the first `next()`
/// and stops the batch when the last copy of the iterator is dropped.
struct BatchStreamCursor<Base: Sequence & Sendable, Output: Sendable> where Base.Element: Sendable {
    private let source: BatchStreamSource<Base, Output>
    private let handle: BatchStreamHandle<Output>

    init(_ source: BatchStreamSource<Base, Output>, order: BatchStreamStateMachine<Output>.Order) {
        self.source = source
        handle = BatchStreamHandle(BatchStreamStorage(order: order, capacity: source.limit + source.buffer))
    }

    func next(isolation actor: isolated (any Actor)?) async -> BatchStreamStateMachine<Output>.Item? {
        handle.storage.startIfNeeded(base: source.base, limit: source.limit, transform: source.transform)
        return await handle.storage.next(isolation: actor)
    }
}
