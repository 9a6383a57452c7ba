import Orchestra

/// State that other threads change (a child's exit status, the bytes it wrote), and waits for a
/// condition on it, each bounded in real time.
///
/// The bound is a hang guard for state that comes from a real process, which runs on real time
/// and not on a test's clock: far longer than any correct run, never a timing assertion.
final class Watched<State: Sendable>: Sendable {
    private typealias Condition = @Sendable (State) -> Bool

    private struct Storage {
        var state: State
        var waiters: [Int: (condition: Condition, continuation: CheckedContinuation<Bool, Never>)] = [:]
        /// Waiters cancelled before they registered.
        var cancelled: Set<Int> = []
        var nextWaiter = 0
    }

    private let storage: Locked<Storage>

    init(_ initial: State) {
        storage = Locked(Storage(state: initial))
    }

    var value: State {
        storage.withLock { $0.state }
    }

    /// Changes the state and wakes the waiters whose condition now holds (after unlocking).
    /// The conditions are pure tests of the state, evaluated under the lock.
    func update(_ change: (inout State) -> Void) {
        let ready = storage.withLock { storage -> [CheckedContinuation<Bool, Never>] in
            change(&storage.state)
            let state = storage.state
            let met = storage.waiters.filter { $0.value.condition(state) }
            for id in met.keys { storage.waiters[id] = nil }
            return met.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Whether `condition` held within `limit` of real time.
    func wait(until condition: @escaping @Sendable (State) -> Bool, limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.suspend(until: condition) }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let held = await group.next() ?? false
            group.cancelAll()
            return held
        }
    }

    /// Suspends until `condition` holds (`true`) or the task is cancelled (`false`).
    private func suspend(until condition: @escaping Condition) async -> Bool {
        let id = storage.withLock { storage in
            defer { storage.nextWaiter += 1 }
            return storage.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = storage.withLock { storage -> Bool? in
                    if condition(storage.state) { return true }
                    if storage.cancelled.remove(id) != nil { return false }
                    storage.waiters[id] = (condition, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = storage.withLock { storage in
                guard let waiter = storage.waiters.removeValue(forKey: id) else {
                    storage.cancelled.insert(id)
                    return nil as CheckedContinuation<Bool, Never>?
                }
                return waiter.continuation
            }
            waiter?.resume(returning: false)
        }
    }
}
