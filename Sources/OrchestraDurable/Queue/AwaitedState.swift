import Orchestra

/// A state behind the project's lock that one task at a time waits on: others change it with
/// ``update(_:)``, which wakes the waiter, and the waiter takes what it waits for with
/// ``wait(for:)`` once it is there. The waiter is resumed after the lock is released.
final class AwaitedState<State: Sendable>: Sendable {
    private struct Storage: Sendable {
        var state: State
        var waiter: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let storage: Locked<Storage>

    init(_ state: State) {
        storage = Locked(Storage(state: state))
    }

    /// Reads the state, waking nobody.
    func read<Result: Sendable>(_ body: (State) -> Result) -> Result {
        storage.withLock { body($0.state) }
    }

    /// Changes the state and wakes the waiter, if one waits, to look again.
    func update<Result: Sendable>(_ change: (inout State) -> Result) -> Result {
        let (result, waiter) = storage.withLock { storage in
            defer { storage.waiter = nil }
            return (change(&storage.state), storage.waiter)
        }
        waiter?.resume()
        return result
    }

    /// Waits until `take` finds what it waits for (it returns non-nil), and returns that.
    ///
    /// Cancellation: returns `nil` once the task is cancelled; a later wait, by another task,
    /// waits as usual.
    func wait<Value: Sendable>(for take: (inout State) -> Value?) async -> Value? {
        // The flag belongs to this wait: an earlier one, cancelled as it ended, may have left it.
        storage.withLock { $0.cancelled = false }
        while true {
            var found: Value?
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    // Taken, or parked, under the lock that `update` changes the state under: a
                    // change is either seen here or wakes the waiter.
                    let resumeNow = storage.withLock { storage in
                        if storage.cancelled || Task.isCancelled { return true }
                        found = take(&storage.state)
                        if found != nil { return true }
                        storage.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                storage.withLock { storage in
                    storage.cancelled = true
                    defer { storage.waiter = nil }
                    return storage.waiter
                }?.resume()
            }
            if let found { return found }
            // A flag left set made every later wait return at once: an idle worker whose wait
            // for work lost a race to its timer then spun.
            if Task.isCancelled { return nil }
        }
    }
}
