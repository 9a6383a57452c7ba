import Foundation
import Orchestra

/// What a queue's workers did, as ``DurableQueue/events()`` reports it.
public enum DurableEvent: Sendable, Hashable {
    /// An attempt of a job started.
    case started(JobKey, attempt: Int)
    /// A job succeeded: its output is stored.
    case succeeded(JobKey, attempt: Int)
    /// An attempt failed; `retryAt` is when the next one is due, `nil` if none will be made.
    case failed(JobKey, attempt: Int, error: String, retryAt: Date?)
    /// A run ended, however.
    case runEnded(runID: String, state: DurableRunState)
}

/// The subscribers to a queue's events: each has a stream of its own, from the moment it
/// subscribed, with nothing dropped.
final class DurableEventHub: Sendable {
    private struct State {
        var next = 0
        var subscribers: [Int: AsyncStream<DurableEvent>.Continuation] = [:]
    }

    private let state = Locked(State())

    func subscribe() -> AsyncStream<DurableEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DurableEvent.self)
        let id = state.withLock { state in
            defer { state.next += 1 }
            state.subscribers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: DurableEvent) {
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber.yield(event) }
    }
}
