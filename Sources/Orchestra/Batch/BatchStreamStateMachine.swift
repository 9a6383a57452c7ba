import DequeModule

/// The pure state of a batch stream (``BatchCompletions`` and ``OrderedBatchResults``).
///
/// The work is done by up to `limit` workers, each taking the next input as soon as it hands
/// over the result of the previous one; the consumer receives results from the machine.
///
/// Counting rule: an item is *outstanding* from the moment a worker takes it until the consumer
/// receives its result. A worker may take an item only while `outstanding < capacity`
/// (`limit + buffer`), so running plus finished-but-unconsumed items never exceed it; in input
/// order, item *i + capacity* cannot start before item *i* was delivered. A worker that finds
/// no room parks until the consumer frees a slot.
///
/// Cancelling the consumer either terminates the stream (it ends at once, dropping what is
/// ready) or, with `deliversRunning`, *stops* it: no item starts any more, the running ones are
/// cancelled, and the consumer receives their outcomes until every worker has ended.
@usableFromInline
struct BatchStreamStateMachine<Output: Sendable>: Sendable {
    /// One input's outcome. (A struct, not a tuple, on the per-item path: should this code run
    /// unspecialised, every use of a tuple of generic types looks its metadata up in the
    /// runtime's locked tuple cache.)
    @usableFromInline
    struct Item: Sendable {
        @usableFromInline var index: Int
        @usableFromInline var result: Result<Output, any Error>

        @inlinable
        init(index: Int, result: Result<Output, any Error>) {
            self.index = index
            self.result = result
        }
    }

    /// A waiting consumer and the item it receives.
    @usableFromInline
    struct HandOff {
        @usableFromInline let consumer: ConsumerContinuation
        @usableFromInline let item: Item

        @inlinable
        init(consumer: ConsumerContinuation, item: Item) {
            self.consumer = consumer
            self.item = item
        }
    }

    /// What stopping the stream leaves to do: the workers' task to cancel, and the
    /// continuations to resume with "the end".
    @usableFromInline
    struct Termination {
        @usableFromInline let task: Task<Void, Never>?
        @usableFromInline let consumer: ConsumerContinuation?
        @usableFromInline let workers: [WorkerContinuation]

        @inlinable
        init(task: Task<Void, Never>?, consumer: ConsumerContinuation?, workers: [WorkerContinuation]) {
            self.task = task
            self.consumer = consumer
            self.workers = workers
        }
    }
    @usableFromInline typealias ConsumerContinuation = CheckedContinuation<Item?, Never>
    /// A parked worker, resumed with `true` when a slot was reserved for it, `false` to stop.
    @usableFromInline typealias WorkerContinuation = CheckedContinuation<Bool, Never>

    @usableFromInline
    enum Order: Sendable {
        case completion
        case input
    }

    @usableFromInline
    enum Phase: Sendable {
        case idle
        case running(Task<Void, Never>)
        /// Every worker ended: everything started has delivered.
        case drained
        /// The consumer went away or was cancelled.
        case terminated
    }

    @usableFromInline let order: Order
    @usableFromInline let capacity: Int
    /// What cancelling the consumer does: stop (`true`) or terminate.
    @usableFromInline let deliversRunning: Bool
    @usableFromInline var phase = Phase.idle
    /// Stopped: no worker takes another item; those running deliver their outcomes.
    @usableFromInline var stopping = false
    @usableFromInline var outstanding = 0
    /// The input has no more elements: no worker takes another.
    @usableFromInline var inputEnded = false
    /// Completion order: results in the order they were delivered.
    @usableFromInline var completed: Deque<Item> = []
    /// Input order: the result of item `nextIndex + k` waits at `window[k]` (items outstanding
    /// have indices below `nextIndex + capacity`, so the window never grows beyond that; no
    /// hashing per item).
    @usableFromInline var window: Deque<Result<Output, any Error>?> = []
    @usableFromInline var nextIndex = 0
    @usableFromInline var consumer: ConsumerContinuation?
    @usableFromInline var parked: [WorkerContinuation] = []
    /// A parked worker was woken and has not taken its item yet. No other is woken meanwhile:
    /// the consumer frees slots one at a time, and waking a worker per slot would cost two
    /// task switches per item whenever results pile up (each woken worker taking one item and
    /// parking again). The woken worker takes every free slot it finds as it goes, and wakes
    /// the next parked worker itself if room is left once it has taken its item, so slow items
    /// still start as soon as their slot frees.
    @usableFromInline var waking = false

    /// How many workers are parked.
    @inlinable
    var parkedCount: Int { parked.count }

    @inlinable
    init(order: Order, capacity: Int, deliversRunning: Bool = false) {
        self.order = order
        self.capacity = capacity
        self.deliversRunning = deliversRunning
    }

    @inlinable
    var isIdle: Bool {
        if case .idle = phase { return true }
        return false
    }

    @inlinable
    mutating func started(_ task: Task<Void, Never>) -> Task<Void, Never>? {
        // Not idle: terminated (the task is cancelled), or drained already (it has finished).
        guard case .idle = phase else { return task }
        phase = .running(task)
        return nil
    }

    // MARK: Worker side

    @usableFromInline
    enum SlotAction {
        case proceed
        case stop
        case suspend
    }

    /// A worker asks to take one more item.
    @inlinable
    mutating func reserveSlot() -> SlotAction {
        if case .terminated = phase { return .stop }
        if inputEnded || stopping { return .stop }
        guard outstanding < capacity else { return .suspend }
        outstanding += 1
        return .proceed
    }

    /// A worker with a reserved slot found the input exhausted: it gives the slot back, and
    /// the parked workers (to resume with `false`) stop too.
    @inlinable
    mutating func endOfInput() -> [WorkerContinuation] {
        outstanding -= 1
        inputEnded = true
        defer { parked.removeAll() }
        return parked
    }

    /// Called under the lock from inside a worker's continuation closure: `true` if a slot was
    /// reserved at once, `false` to stop, `nil` if it parks.
    @inlinable
    mutating func suspendWorker(_ continuation: WorkerContinuation, isCancelled: Bool) -> Bool? {
        switch reserveSlot() {
        case .proceed: return true
        case .stop: return false
        case .suspend:
            if isCancelled { return false }
            parked.append(continuation)
            return nil
        }
    }

    /// An item finished. Returns the waiting consumer with what it receives.
    @inlinable
    mutating func deliver(_ item: Item) -> HandOff? {
        if case .terminated = phase { return nil }
        switch order {
        case .completion:
            completed.append(item)
        case .input:
            let offset = item.index - nextIndex
            while window.count <= offset { window.append(nil) }
            window[offset] = item.result
        }
        guard let consumer, let next = popDeliverable() else { return nil }
        self.consumer = nil
        return HandOff(consumer: consumer, item: next)
    }

    /// Every worker ended (possibly before ``started(_:)`` recorded their task).
    @inlinable
    mutating func workersFinished() -> ConsumerContinuation? {
        switch phase {
        case .running, .idle: break
        case .drained, .terminated: return nil
        }
        phase = .drained
        defer { consumer = nil }
        return consumer
    }

    /// A slot is free, a worker is parked and none is already on its way: the slot is reserved
    /// for it, to resume with `true`.
    @inlinable
    mutating func takeWorkerForFreedSlot() -> WorkerContinuation? {
        guard !waking, !parked.isEmpty, outstanding < capacity, !inputEnded, !stopping else { return nil }
        if case .terminated = phase { return nil }
        outstanding += 1
        waking = true
        return parked.removeLast()
    }

    /// The woken worker took its reserved slot: the next parked worker may be woken, and is at
    /// once if room is left.
    @inlinable
    mutating func wokenWorkerArrived() -> WorkerContinuation? {
        waking = false
        return takeWorkerForFreedSlot()
    }

    // MARK: Consumer side

    @usableFromInline
    enum NextAction {
        case deliver(Item, wakeWorker: WorkerContinuation?)
        case end
        case suspend
    }

    @inlinable
    mutating func next() -> NextAction {
        if let item = popDeliverable() { return .deliver(item, wakeWorker: takeWorkerForFreedSlot()) }
        switch phase {
        case .drained, .terminated: return .end
        case .idle, .running: return .suspend
        }
    }

    /// What a consumer about to suspend does, and, if it was cancelled, the workers' task to
    /// cancel and the parked workers to stop.
    @usableFromInline
    struct Suspension {
        @usableFromInline let action: NextAction
        @usableFromInline let taskToCancel: Task<Void, Never>?
        @usableFromInline let workersToStop: [WorkerContinuation]

        @inlinable
        init(action: NextAction, taskToCancel: Task<Void, Never>?, workersToStop: [WorkerContinuation] = []) {
            self.action = action
            self.taskToCancel = taskToCancel
            self.workersToStop = workersToStop
        }
    }

    /// Called under the lock from inside the consumer's continuation closure.
    @inlinable
    mutating func suspendConsumer(_ continuation: ConsumerContinuation, isCancelled: Bool) -> Suspension {
        var stopped: Termination?
        if isCancelled {
            guard deliversRunning else { return Suspension(action: .end, taskToCancel: terminate().task) }
            stopped = stop()
        }
        let action = next()
        if case .suspend = action { consumer = continuation }
        return Suspension(action: action, taskToCancel: stopped?.task, workersToStop: stopped?.workers ?? [])
    }

    /// The consumer was cancelled: the stream terminates, or with `deliversRunning` stops
    /// (``stop()``).
    @inlinable
    mutating func consumerCancelled() -> Termination {
        deliversRunning ? stop() : terminate()
    }

    /// No item starts any more: parked workers stop and the running items are cancelled (the
    /// workers' task is handed back to cancel), but their outcomes are still delivered, and
    /// the stream ends once every worker has ended. Stopping twice, or a stream that ended,
    /// changes nothing.
    @inlinable
    mutating func stop() -> Termination {
        let task: Task<Void, Never>?
        switch phase {
        case .drained, .terminated: return Termination(task: nil, consumer: nil, workers: [])
        case .idle: task = nil
        case .running(let running): task = stopping ? nil : running
        }
        stopping = true
        defer { parked.removeAll() }
        return Termination(task: task, consumer: nil, workers: parked)
    }

    /// The consumer stopped (its iterator was dropped or its task cancelled). Returns the
    /// task of the workers to cancel and the continuations to resume with "the end".
    @inlinable
    mutating func terminate() -> Termination {
        let task: Task<Void, Never>?
        if case .running(let running) = phase { task = running } else { task = nil }
        phase = .terminated
        completed.removeAll()
        window.removeAll()
        defer {
            consumer = nil
            parked.removeAll()
        }
        return Termination(task: task, consumer: consumer, workers: parked)
    }

    @inlinable
    mutating func popDeliverable() -> Item? {
        let item: Item?
        switch order {
        case .completion:
            guard let first = completed.popFirst() else { return nil }
            item = first
        case .input:
            guard let first = window.first, let result = first else { return nil }
            window.removeFirst()
            item = Item(index: nextIndex, result: result)
            nextIndex += 1
        }
        outstanding -= 1
        return item
    }
}
