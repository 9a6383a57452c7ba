import Orchestra

/// The jobs a queue's workers are running, whose leases it renews; and a wait for there to be
/// one, so the renewal sleeps on the clock only while a lease is held.
final class HeldLeases: Sendable {
    private struct State {
        var keys: Set<JobKey> = []
        var waiter: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Locked(State())

    /// The jobs held now.
    var keys: [JobKey] { state.withLock { Array($0.keys) } }

    func insert(_ key: JobKey) {
        state.withLock { state in
            state.keys.insert(key)
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }

    func remove(_ key: JobKey) {
        state.withLock { _ = $0.keys.remove(key) }
    }

    /// Returns once a job is held (at once if one is), or when the task is cancelled.
    func waitForOne() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    guard state.keys.isEmpty, !state.cancelled, !Task.isCancelled else { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }?.resume()
        }
    }
}
