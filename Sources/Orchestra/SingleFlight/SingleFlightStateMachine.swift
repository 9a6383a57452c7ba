/// The pure state of a ``SingleFlight``: for each key in flight, its execution and its waiters.
struct SingleFlightStateMachine<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Continuation = CheckedContinuation<Value, any Error>

    private struct Flight {
        var generation: UInt64
        var waiters: [UInt64: Continuation] = [:]
        var task: Task<Void, Never>?
    }

    private var flights: [Key: Flight] = [:]
    private var nextID: UInt64 = 0

    var keysInFlight: Int { flights.count }

    func waiterCount(for key: Key) -> Int { flights[key]?.waiters.count ?? 0 }

    mutating func makeID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    enum JoinAction {
        /// The first waiter: start the work, tagged with this generation.
        case start(generation: UInt64)
        /// Work for this key is already running; wait for it.
        case joined
        case cancelled
    }

    mutating func join(key: Key, id: UInt64, continuation: Continuation, isCancelled: Bool) -> JoinAction {
        if isCancelled { return .cancelled }
        if flights[key] != nil {
            flights[key]!.waiters[id] = continuation
            return .joined
        }
        let generation = makeID()
        flights[key] = Flight(generation: generation, waiters: [id: continuation])
        return .start(generation: generation)
    }

    /// Records the task running the work, unless every waiter already left (then the task is
    /// returned to be cancelled).
    mutating func attach(_ task: Task<Void, Never>, key: Key, generation: UInt64) -> Task<Void, Never>? {
        guard flights[key]?.generation == generation else { return task }
        flights[key]!.task = task
        return nil
    }

    /// The work for `key` ended: every waiter gets its result.
    mutating func finish(key: Key, generation: UInt64) -> [Continuation] {
        guard let flight = flights[key], flight.generation == generation else { return [] }
        flights[key] = nil
        return Array(flight.waiters.values)
    }

    /// A waiter was cancelled. Returns its continuation (to resume with `CancellationError`)
    /// and, if it was the last waiter, the task to cancel.
    mutating func leave(key: Key, id: UInt64) -> (Continuation?, Task<Void, Never>?) {
        guard let waiter = flights[key]?.waiters.removeValue(forKey: id) else { return (nil, nil) }
        guard flights[key]!.waiters.isEmpty else { return (waiter, nil) }
        let task = flights.removeValue(forKey: key)?.task
        return (waiter, task)
    }
}
