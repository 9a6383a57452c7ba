/// Runs a batch stream: up to `limit` worker tasks that take the inputs one after another, and
/// the consumer's `next()`.
///
/// A worker hands over its result and reserves room for its next input under one lock, then
/// takes that input from the iterator under the iterator's own lock, so a batch makes no task
/// per item and no task switch beyond handing a result to a consumer that waits for it (or
/// waking a worker that waited for room). The workers are children of one task group
/// in an unstructured task, because an `AsyncIterator` cannot own a task group across `next()`
/// calls; that task is cancelled as soon as the iterator is dropped or its consumer is
/// cancelled, which cancels every running item and starts nothing new.
///
/// The stream's code (this file, the state machine, the lock) is `@inlinable`, as
/// `concurrentMap` is, so the caller's module specialises it for its element and output types.
/// Unspecialised, it looked type metadata up in the runtime's locked caches several times per
/// item, most of a no-op batch's time (BENCHMARKS.md#batches; Benchmarks/History.md, the
/// performance pass's third session). Their members are `@usableFromInline` rather than private for
/// the same reason; the state machine's are still only read and written by its own methods,
/// under the lock.
@usableFromInline
final class BatchStreamStorage<Base: Sequence & Sendable, Output: Sendable>: Sendable where Base.Element: Sendable {
    @usableFromInline typealias Machine = BatchStreamStateMachine<Output>

    /// An input taken by a worker, with its position.
    @usableFromInline
    struct Input {
        @usableFromInline let index: Int
        @usableFromInline let element: Base.Element

        @inlinable
        init(index: Int, element: Base.Element) {
            self.index = index
            self.element = element
        }
    }

    /// The input's iterator and the position of its next element.
    @usableFromInline
    struct Cursor: @unchecked Sendable {
        // `@unchecked`: the iterator of a `Sendable` sequence need not be `Sendable`; it is
        // only used inside its lock, so by one thread at a time, and hands out `Sendable`
        // elements.
        @usableFromInline var iterator: Base.Iterator?
        @usableFromInline var position = 0

        @inlinable
        init(iterator: Base.Iterator?) {
            self.iterator = iterator
        }

        @inlinable
        mutating func next() -> Input? {
            guard let element = iterator?.next() else {
                iterator = nil
                return nil
            }
            defer { position += 1 }
            return Input(index: position, element: element)
        }
    }

    /// What a worker does after handing over a result: wake the consumer, take its next input
    /// (or park, or stop), wake a parked worker.
    @usableFromInline
    struct Step {
        @usableFromInline let handOff: Machine.HandOff?
        @usableFromInline let slot: Machine.SlotAction
        @usableFromInline let wake: Machine.WorkerContinuation?

        @inlinable
        init(handOff: Machine.HandOff?, slot: Machine.SlotAction, wake: Machine.WorkerContinuation?) {
            self.handOff = handOff
            self.slot = slot
            self.wake = wake
        }
    }

    @usableFromInline let state: Locked<Machine>
    /// The iterator runs the caller's code (a lazy sequence's closures), so it has a lock of
    /// its own and never runs under the state's.
    @usableFromInline let cursor: Locked<Cursor>
    @usableFromInline let transform: @Sendable (Base.Element) async throws -> Output
    /// With a rate: each item waits for its permit here after taking its slot and its input.
    @usableFromInline let limiter: RateLimiter?

    @inlinable
    init(
        base: Base, order: Machine.Order, capacity: Int, deliversRunning: Bool, limiter: RateLimiter? = nil,
        transform: @escaping @Sendable (Base.Element) async throws -> Output
    ) {
        state = Locked(Machine(order: order, capacity: capacity, deliversRunning: deliversRunning))
        cursor = Locked(Cursor(iterator: base.makeIterator()))
        self.transform = transform
        self.limiter = limiter
    }

    /// Starts the workers on the first `next()`: one per input taken, up to `limit`.
    @inlinable
    func startIfNeeded(limit: Int) {
        guard state.withLock({ $0.isIdle }) else { return }
        // A consumer cancelled before its first `next()` starts nothing when the running items
        // are to be delivered (otherwise `next()` terminates the stream).
        if Task.isCancelled, state.withLock({ $0.deliversRunning }) { _ = state.withLock { $0.stop() } }
        // Unstructured on purpose: see the type's documentation. It inherits the consumer's
        // priority and task-local values, and is cancelled by `terminate()`.
        let task = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                // A worker per input taken; one that finds no room (items already taken by
                // quicker workers) starts parked, so the pool still reaches `limit`.
                starting: for _ in 0..<limit {
                    switch state.withLock({ $0.reserveSlot() }) {
                    case .stop:
                        break starting
                    case .suspend:
                        group.addTask { await self.work(from: nil) }
                    case .proceed:
                        guard let input = takeInput() else { break starting }
                        group.addTask { await self.work(from: input) }
                    }
                }
            }
            state.withLock { $0.workersFinished() }?.resume(returning: nil)
        }
        state.withLock { $0.started(task) }?.cancel()
    }

    /// A worker: transforms inputs one after another until there is none left or the stream
    /// is terminated. A worker started without an input parks first.
    @inlinable
    func work(from first: Input?) async {
        var current = if let first { first } else { await parkAndTake() }
        while let input = current {
            let item = Machine.Item(index: input.index, result: await run(input.element))
            let step = state.withLock { machine in
                let handOff = machine.deliver(item)
                let slot = machine.reserveSlot()
                // Room left after this worker reserved its next slot: wake a parked one.
                return Step(handOff: handOff, slot: slot, wake: machine.takeWorkerForFreedSlot())
            }
            if let handOff = step.handOff { handOff.consumer.resume(returning: handOff.item) }
            step.wake?.resume(returning: true)
            switch step.slot {
            case .proceed: current = takeInput()
            case .suspend: current = await parkAndTake()
            case .stop: current = nil
            }
        }
    }

    /// One item's outcome: its permit first when the batch has a rate (a cancelled wait is the
    /// item's `CancellationError`), then its transform.
    @inlinable
    func run(_ element: Base.Element) async -> Result<Output, any Error> {
        if let limiter {
            do { try await limiter.acquire() } catch { return .failure(error) }
        }
        return await Result { try await transform(element) }
    }

    /// The next input, for a worker that holds a reserved slot; at the end of the input, the
    /// slot is given back and the parked workers stop.
    @inlinable
    func takeInput() -> Input? {
        if let input = cursor.withLock({ $0.next() }) { return input }
        for worker in state.withLock({ $0.endOfInput() }) { worker.resume(returning: false) }
        return nil
    }

    /// Parks until a slot is reserved for this worker (then takes an input) or the stream
    /// stops (`nil`).
    @inlinable
    func parkAndTake() async -> Input? {
        var woken = true
        let reserved = await withCheckedContinuation { (worker: Machine.WorkerContinuation) in
            if let now = state.withLock({ $0.suspendWorker(worker, isCancelled: Task.isCancelled) }) {
                woken = false
                worker.resume(returning: now)
            }
        }
        guard reserved else { return nil }
        // Woken by a freed slot: the next parked worker may be woken now.
        if woken { state.withLock { $0.wokenWorkerArrived() }?.resume(returning: true) }
        return takeInput()
    }

    /// The consumer's `next()`: the next item in the stream's order, or `nil` at the end or
    /// when the consuming task is cancelled (which terminates the batch, or stops it and goes
    /// on delivering the running items' outcomes: ``BatchCancellation``).
    @inlinable
    func next(isolation: isolated (any Actor)?) async -> Machine.Item? {
        switch state.withLock({ $0.next() }) {
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
                let suspension = state.withLock { $0.suspendConsumer(continuation, isCancelled: Task.isCancelled) }
                suspension.taskToCancel?.cancel()
                for worker in suspension.workersToStop { worker.resume(returning: false) }
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
            let ended = state.withLock { $0.consumerCancelled() }
            ended.task?.cancel()
            ended.consumer?.resume(returning: nil)
            for worker in ended.workers { worker.resume(returning: false) }
        }
    }

    /// Stops the batch: cancels the workers' task (and with it every running item) and ends
    /// the stream for the consumer.
    @inlinable
    func terminate() {
        let ended = state.withLock { $0.terminate() }
        ended.task?.cancel()
        ended.consumer?.resume(returning: nil)
        for worker in ended.workers { worker.resume(returning: false) }
    }
}

/// Owned by an iterator: dropping the iterator stops the batch.
@usableFromInline
final class BatchStreamHandle<Base: Sequence & Sendable, Output: Sendable>: Sendable where Base.Element: Sendable {
    @usableFromInline let storage: BatchStreamStorage<Base, Output>

    @inlinable
    init(_ storage: BatchStreamStorage<Base, Output>) {
        self.storage = storage
    }

    deinit {
        storage.terminate()
    }
}

/// What a batch stream runs: the inputs, the limits, what cancelling its consumer does and the
/// work for one element.
@usableFromInline
struct BatchStreamSource<Base: Sequence & Sendable, Output: Sendable>: Sendable where Base.Element: Sendable {
    @usableFromInline let base: Base
    @usableFromInline let limit: Int
    @usableFromInline let buffer: Int
    @usableFromInline let cancellation: BatchCancellation
    /// Makes each run's rate limiter; `nil` without a rate.
    @usableFromInline let pace: (@Sendable () -> RateLimiter)?
    @usableFromInline let transform: @Sendable (Base.Element) async throws -> Output

    @inlinable
    init(
        base: Base, limit: Int, buffer: Int, cancellation: BatchCancellation = .endAtOnce, function: StaticString,
        pace: (@Sendable () -> RateLimiter)? = nil, transform: @escaping @Sendable (Base.Element) async throws -> Output
    ) {
        checkArgument(limit >= 1, "\(function): limit must be at least 1, got \(limit)")
        checkArgument(buffer >= 0, "\(function): buffer must be 0 or more, got \(buffer)")
        self.base = base
        self.limit = limit
        self.buffer = buffer
        self.cancellation = cancellation
        self.pace = pace
        self.transform = transform
    }
}

/// The shared part of the batch streams' iterators: starts the workers on the first `next()`
/// and stops the batch when the last copy of the iterator is dropped.
@usableFromInline
struct BatchStreamCursor<Base: Sequence & Sendable, Output: Sendable> where Base.Element: Sendable {
    @usableFromInline let limit: Int
    @usableFromInline let handle: BatchStreamHandle<Base, Output>

    @inlinable
    init(_ source: BatchStreamSource<Base, Output>, order: BatchStreamStateMachine<Output>.Order) {
        limit = source.limit
        let (capacity, overflow) = source.limit.addingReportingOverflow(source.buffer)
        handle = BatchStreamHandle(
            BatchStreamStorage(
                base: source.base, order: order, capacity: overflow ? .max : capacity,
                deliversRunning: source.cancellation == .deliverRunning, limiter: source.pace?(),
                transform: source.transform))
    }

    @inlinable
    func next(isolation actor: isolated (any Actor)?) async -> BatchStreamStateMachine<Output>.Item? {
        handle.storage.startIfNeeded(limit: limit)
        return await handle.storage.next(isolation: actor)
    }
}
