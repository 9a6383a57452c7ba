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
struct BatchStreamStateMachine<Output: Sendable> {
    typealias Item = (index: Int, result: Result<Output, any Error>)
    typealias ConsumerContinuation = CheckedContinuation<Item?, Never>
    /// A parked worker, resumed with `true` when a slot was reserved for it, `false` to stop.
    typealias WorkerContinuation = CheckedContinuation<Bool, Never>

    enum Order {
        case completion
        case input
    }

    private enum Phase {
        case idle
        case running(Task<Void, Never>)
        /// Every worker ended: everything started has delivered.
        case drained
        /// The consumer went away or was cancelled.
        case terminated
    }

    private let order: Order
    private let capacity: Int
    private var phase = Phase.idle
    private var outstanding = 0
    /// The input has no more elements: no worker takes another.
    private var inputEnded = false
    /// Completion order: results in the order they were delivered.
    private var completed: Deque<Item> = []
    /// Input order: the result of item `nextIndex + k` waits at `window[k]` (items outstanding
    /// have indices below `nextIndex + capacity`, so the window never grows beyond that; no
    /// hashing per item).
    private var window: Deque<Result<Output, any Error>?> = []
    private var nextIndex = 0
    private var consumer: ConsumerContinuation?
    private var parked: [WorkerContinuation] = []

    init(order: Order, capacity: Int) {
        self.order = order
        self.capacity = capacity
    }

    var isIdle: Bool {
        if case .idle = phase { return true }
        return false
    }

    mutating func started(_ task: Task<Void, Never>) -> Task<Void, Never>? {
        guard case .idle = phase else { return task }
        phase = .running(task)
        return nil
    }

    // MARK: Worker side

    enum SlotAction {
        case proceed
        case stop
        case suspend
    }

    /// A worker asks to take one more item.
    mutating func reserveSlot() -> SlotAction {
        if case .terminated = phase { return .stop }
        if inputEnded { return .stop }
        guard outstanding < capacity else { return .suspend }
        outstanding += 1
        return .proceed
    }

    /// A worker with a reserved slot found the input exhausted: it gives the slot back, and
    /// the parked workers (to resume with `false`) stop too.
    mutating func endOfInput() -> [WorkerContinuation] {
        outstanding -= 1
        inputEnded = true
        defer { parked.removeAll() }
        return parked
    }

    /// Called under the lock from inside a worker's continuation closure: `true` if a slot was
    /// reserved at once, `false` to stop, `nil` if it parks.
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
    mutating func deliver(_ item: Item) -> (consumer: ConsumerContinuation, item: Item)? {
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
        return (consumer, next)
    }

    /// Every worker ended.
    mutating func driverFinished() -> ConsumerContinuation? {
        guard case .running = phase else { return nil }
        phase = .drained
        defer { consumer = nil }
        return consumer
    }

    /// A slot is free and a worker is parked: the slot is reserved for it, to resume with `true`.
    mutating func takeWorkerForFreedSlot() -> WorkerContinuation? {
        guard !parked.isEmpty, outstanding < capacity, !inputEnded else { return nil }
        if case .terminated = phase { return nil }
        outstanding += 1
        return parked.removeLast()
    }

    // MARK: Consumer side

    enum NextAction {
        case deliver(Item, wakeWorker: WorkerContinuation?)
        case end
        case suspend
    }

    mutating func next() -> NextAction {
        if let item = popDeliverable() { return .deliver(item, wakeWorker: takeWorkerForFreedSlot()) }
        switch phase {
        case .drained, .terminated: return .end
        case .idle, .running: return .suspend
        }
    }

    /// Called under the lock from inside the consumer's continuation closure.
    mutating func suspendConsumer(
        _ continuation: ConsumerContinuation, isCancelled: Bool
    ) -> (NextAction, Task<Void, Never>?) {
        if isCancelled { return (.end, terminate().task) }
        let action = next()
        if case .suspend = action { consumer = continuation }
        return (action, nil)
    }

    /// The consumer stopped (its iterator was dropped or its task cancelled). Returns the
    /// task of the workers to cancel and the continuations to resume with "the end".
    mutating func terminate() -> (
        task: Task<Void, Never>?, consumer: ConsumerContinuation?, workers: [WorkerContinuation]
    ) {
        let task: Task<Void, Never>?
        if case .running(let running) = phase { task = running } else { task = nil }
        phase = .terminated
        completed.removeAll()
        window.removeAll()
        defer {
            consumer = nil
            parked.removeAll()
        }
        return (task, consumer, parked)
    }

    private mutating func popDeliverable() -> Item? {
        let item: Item?
        switch order {
        case .completion:
            guard let first = completed.popFirst() else { return nil }
            item = first
        case .input:
            guard let first = window.first, let result = first else { return nil }
            window.removeFirst()
            item = (nextIndex, result)
            nextIndex += 1
        }
        outstanding -= 1
        return item
    }
}
