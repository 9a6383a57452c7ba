import DequeModule

/// A FIFO queue of suspended waiters that can also drop any waiter by id in O(1).
///
/// Cancellation removes a waiter from the dictionary and leaves its id in `order` as a
/// tombstone; `popFirst()` skips tombstones. When tombstones pile up (many cancels, no
/// signals) the order is compacted so memory stays proportional to the live waiters.
struct WaiterQueue<Waiter> {
    private var order: Deque<UInt64> = []
    private var waiting: [UInt64: Waiter] = [:]
    private var nextID: UInt64 = 0

    var count: Int { waiting.count }
    var isEmpty: Bool { waiting.isEmpty }

    /// A fresh id; ids are never reused by one queue.
    mutating func makeID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    mutating func append(_ waiter: Waiter, id: UInt64) {
        order.append(id)
        waiting[id] = waiter
    }

    /// Whether the waiter with this id is still waiting.
    func contains(id: UInt64) -> Bool { waiting[id] != nil }

    /// Removes the waiter with this id, if it is still waiting.
    mutating func remove(id: UInt64) -> Waiter? {
        guard let waiter = waiting.removeValue(forKey: id) else { return nil }
        if order.count > 32 && order.count > 2 * waiting.count {
            let live = waiting
            order = Deque(order.filter { live[$0] != nil })
        }
        return waiter
    }

    /// Removes and returns the longest-waiting waiter.
    mutating func popFirst() -> Waiter? {
        while let id = order.popFirst() {
            if let waiter = waiting.removeValue(forKey: id) { return waiter }
        }
        return nil
    }

    /// Removes and returns every waiter, oldest first.
    mutating func removeAll() -> [Waiter] {
        var all: [Waiter] = []
        all.reserveCapacity(waiting.count)
        while let waiter = popFirst() { all.append(waiter) }
        order.removeAll()
        return all
    }
}

extension WaiterQueue: Sendable where Waiter: Sendable {}
