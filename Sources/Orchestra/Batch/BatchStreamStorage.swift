/// Runs a batch stream: up to `limit` worker tasks that take the inputs one after another, and
/// the consumer's `next()`.
///
/// A worker hands over its result and takes the next input under one lock, so a batch makes
/// no task per item and no task switch beyond handing a result to a consumer that waits for
/// it (or waking a worker that waited for room). The workers are children of one task group
/// in an unstructured task, because an `AsyncIterator` cannot own a task group across `next()`
/// calls; that task is cancelled as soon as the iterator is dropped or its consumer is
/// cancelled, which cancels every running item and starts nothing new.
final class BatchStreamStorage<Base: Sequence & Sendable, Output: Sendable>: Sendable where Base.Element: Sendable {
    typealias Machine = BatchStreamStateMachine<Output>

    /// The machine and the input's iterator, behind one lock.
    struct State: @unchecked Sendable {
        // `@unchecked`: the iterator of a `Sendable` sequence need not be `Sendable`; it is
        // only used inside `withLock`, so by one thread at a time, and hands out `Sendable`
        // elements.
        var machine: Machine
        var iterator: Base.Iterator?
        var position = 0

        /// An input taken by a worker, with its position.
        struct Input {
            let index: Int
            let element: Base.Element
        }

        enum Take {
            case item(Input)
            case park
            case stop(wake: [Machine.WorkerContinuation])
        }

        /// What a worker does after handing over a result: wake the consumer, run its next
        /// input (or park), wake a parked worker.
        struct Step {
            let handOff: Machine.HandOff?
            let take: Take
            let wake: Machine.WorkerContinuation?
        }

        /// The next input for a worker, with a slot reserved for it (or already reserved).
        mutating func take(reserved: Bool) -> Take {
            if !reserved {
                switch machine.reserveSlot() {
                case .proceed: break
                case .suspend: return .park
                case .stop: return .stop(wake: [])
                }
            }
            guard let element = iterator?.next() else {
                iterator = nil
                return .stop(wake: machine.endOfInput())
            }
            defer { position += 1 }
            return .item(Input(index: position, element: element))
        }
    }

    private let state: Locked<State>
    private let transform: @Sendable (Base.Element) async throws -> Output

    init(
        base: Base, order: Machine.Order, capacity: Int,
        transform: @escaping @Sendable (Base.Element) async throws -> Output
    ) {
        state = Locked(State(machine: Machine(order: order, capacity: capacity), iterator: base.makeIterator()))
        self.transform = transform
    }

    /// Starts the workers on the first `next()`: one per input taken, up to `limit`.
    func startIfNeeded(limit: Int) {
        guard state.withLock({ $0.machine.isIdle }) else { return }
        // Unstructured on purpose: see the type's documentation. It inherits the consumer's
        // priority and task-local values, and is cancelled by `terminate()`.
        let task = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                // A worker per input taken; one that finds no room (items already taken by
                // quicker workers) starts parked, so the pool still reaches `limit`.
                for _ in 0..<limit {
                    let take = state.withLock { $0.take(reserved: false) }
                    if case .stop(let wake) = take {
                        for worker in wake { worker.resume(returning: false) }
                        break
                    }
                    group.addTask { await self.work(from: take) }
                }
            }
            state.withLock { $0.machine.workersFinished() }?.resume(returning: nil)
        }
        state.withLock { $0.machine.started(task) }?.cancel()
    }

    /// A worker: transforms inputs one after another until there is none left or the stream
    /// is terminated.
    private func work(from first: State.Take) async {
        var current = await next(after: first)
        while let input = current {
            let item = Machine.Item(index: input.index, result: await Result { try await transform(input.element) })
            let step = state.withLock { state in
                let handOff = state.machine.deliver(item)
                let take = state.take(reserved: false)
                // Room left after this worker took its next input: wake a parked one.
                return State.Step(handOff: handOff, take: take, wake: state.machine.takeWorkerForFreedSlot())
            }
            if let handOff = step.handOff { handOff.consumer.resume(returning: handOff.item) }
            step.wake?.resume(returning: true)
            current = await next(after: step.take)
        }
    }

    /// What a worker runs next: the input it took, or one it waits for room to take.
    private func next(after take: State.Take) async -> State.Input? {
        switch take {
        case .item(let input):
            return input
        case .stop(let wake):
            for worker in wake { worker.resume(returning: false) }
            return nil
        case .park:
            let reserved = await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
                let now = state.withLock { $0.machine.suspendWorker(worker, isCancelled: Task.isCancelled) }
                if let now { worker.resume(returning: now) }
            }
            guard reserved else { return nil }
            let step = state.withLock { state in
                let take = state.take(reserved: true)
                return State.Step(handOff: nil, take: take, wake: state.machine.wokenWorkerArrived())
            }
            step.wake?.resume(returning: true)
            return await next(after: step.take)
        }
    }

    /// The consumer's `next()`: the next item in the stream's order, or `nil` at the end or
    /// when the consuming task is cancelled (which also stops the batch).
    func next(isolation: isolated (any Actor)?) async -> Machine.Item? {
        switch state.withLock({ $0.machine.next() }) {
        case .deliver(let item, let worker):
            worker?.resume(returning: true)
            return item
        case .end:
            return nil
        case .suspend:
            break
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: isolation) { (continuation: Machine.ConsumerContinuation) in
                let suspension = state.withLock {
                    $0.machine.suspendConsumer(continuation, isCancelled: Task.isCancelled)
                }
                suspension.taskToCancel?.cancel()
                switch suspension.action {
                case .deliver(let item, let worker):
                    worker?.resume(returning: true)
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

    /// Stops the batch: cancels the workers' task (and with it every running item) and ends
    /// the stream for the consumer.
    func terminate() {
        let ended = state.withLock { $0.machine.terminate() }
        ended.task?.cancel()
        ended.consumer?.resume(returning: nil)
        for worker in ended.workers { worker.resume(returning: false) }
    }
}

/// Owned by an iterator: dropping the iterator stops the batch.
final class BatchStreamHandle<Base: Sequence & Sendable, Output: Sendable>: Sendable where Base.Element: Sendable {
    let storage: BatchStreamStorage<Base, Output>

    init(_ storage: BatchStreamStorage<Base, Output>) {
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

/// The shared part of the batch streams' iterators: starts the workers on the first `next()`
/// and stops the batch when the last copy of the iterator is dropped.
struct BatchStreamCursor<Base: Sequence & Sendable, Output: Sendable> where Base.Element: Sendable {
    private let limit: Int
    private let handle: BatchStreamHandle<Base, Output>

    init(_ source: BatchStreamSource<Base, Output>, order: BatchStreamStateMachine<Output>.Order) {
        limit = source.limit
        let (capacity, overflow) = source.limit.addingReportingOverflow(source.buffer)
        handle = BatchStreamHandle(
            BatchStreamStorage(
                base: source.base, order: order, capacity: overflow ? .max : capacity, transform: source.transform))
    }

    func next(isolation actor: isolated (any Actor)?) async -> BatchStreamStateMachine<Output>.Item? {
        handle.storage.startIfNeeded(limit: limit)
        return await handle.storage.next(isolation: actor)
    }
}
