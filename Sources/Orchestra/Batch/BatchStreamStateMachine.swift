import DequeModule

/// The pure state of a batch stream (``BatchCompletions`` and ``OrderedBatchResults``).
///
/// Counting rule: an item is *outstanding* from the moment the driver starts it until the
/// consumer receives its result. The driver may start an item only while
/// `outstanding < capacity` (`limit + buffer`), so running plus finished-but-unconsumed items
/// never exceed it; in input order, item *i + capacity* cannot start before item *i* was
/// delivered.
struct BatchStreamStateMachine<Output: Sendable> {
    typealias Item = (index: Int, result: Result<Output, any Error>)
    typealias ConsumerContinuation = CheckedContinuation<Item?, Never>
    typealias DriverContinuation = CheckedContinuation<Bool, Never>

    enum Order {
        case completion
        case input
    }

    private enum Phase {
        case idle
        case running(Task<Void, Never>)
        /// The driver started everything it will start, and every started item has delivered.
        case drained
        /// The consumer went away or was cancelled.
        case terminated
    }

    private let order: Order
    private let capacity: Int
    private var phase = Phase.idle
    private var outstanding = 0
    private var completed: Deque<Item> = []
    private var pendingByIndex: [Int: Result<Output, any Error>] = [:]
    private var nextIndex = 0
    private var consumer: ConsumerContinuation?
    private var driver: DriverContinuation?

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

    // MARK: Driver side

    enum SlotAction {
        case proceed
        case stop
        case suspend
    }

    /// The driver asks to start one more item.
    mutating func reserveSlot() -> SlotAction {
        if case .terminated = phase { return .stop }
        guard outstanding < capacity else { return .suspend }
        outstanding += 1
        return .proceed
    }

    mutating func suspendDriver(_ continuation: DriverContinuation, isCancelled: Bool) -> Bool? {
        if case .terminated = phase { return false }
        if isCancelled { return false }
        if outstanding < capacity {
            outstanding += 1
            return true
        }
        driver = continuation
        return nil
    }

    mutating func cancelDriverWait() -> DriverContinuation? {
        defer { driver = nil }
        return driver
    }

    /// An item finished. Returns the waiting consumer with what it receives, and the driver
    /// to wake if that delivery freed a slot.
    mutating func deliver(_ item: Item) -> (consumer: ConsumerContinuation, item: Item, driver: DriverContinuation?)? {
        if case .terminated = phase { return nil }
        switch order {
        case .completion: completed.append(item)
        case .input: pendingByIndex[item.index] = item.result
        }
        guard let consumer, let next = popDeliverable() else { return nil }
        self.consumer = nil
        return (consumer, next, takeDriverForFreedSlot())
    }

    /// The driver started every item and all of them delivered.
    mutating func driverFinished() -> ConsumerContinuation? {
        guard case .running = phase else { return nil }
        phase = .drained
        defer { consumer = nil }
        return consumer
    }

    // MARK: Consumer side

    enum NextAction {
        case deliver(Item, wakeDriver: DriverContinuation?)
        case end
        case suspend
    }

    mutating func next() -> NextAction {
        if let item = popDeliverable() { return .deliver(item, wakeDriver: takeDriverForFreedSlot()) }
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
    /// driver task to cancel and the continuations to resume with "the end".
    mutating func terminate() -> (
        task: Task<Void, Never>?, consumer: ConsumerContinuation?, driver: DriverContinuation?
    ) {
        let task: Task<Void, Never>?
        if case .running(let running) = phase { task = running } else { task = nil }
        phase = .terminated
        completed.removeAll()
        pendingByIndex.removeAll()
        defer {
            consumer = nil
            driver = nil
        }
        return (task, consumer, driver)
    }

    private mutating func popDeliverable() -> Item? {
        let item: Item?
        switch order {
        case .completion:
            item = completed.popFirst()
        case .input:
            item = pendingByIndex.removeValue(forKey: nextIndex).map { (nextIndex, $0) }
            if item != nil { nextIndex += 1 }
        }
        if item != nil { outstanding -= 1 }
        return item
    }

    /// A delivered item freed a slot: hand it to a waiting driver.
    private mutating func takeDriverForFreedSlot() -> DriverContinuation? {
        guard let driver, outstanding < capacity else { return nil }
        outstanding += 1
        self.driver = nil
        return driver
    }
}
