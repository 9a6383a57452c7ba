import Orchestra

/// Which of a queue's running attempts have started their effect, for a graceful give-back of
/// ``DurableJobOptions/atMostOnce`` jobs: a job given back before it started is made ready
/// again, one given back after is ``DurableJobState/uncertain``.
///
/// An attempt is *claimed* until its handler is called, then *started*, unless the handler
/// says it still waits (``JobContext/markWaiting()``) until ``JobContext/markStarted()``. A
/// give-back settles it: an attempt given back while not started can no longer start
/// (``JobContext/markStarted()`` throws), so the store's "ready again" stays true.
struct AttemptStartsState: Sendable {
    enum Phase: Sendable, Equatable {
        /// Claimed, its handler not called yet; or its handler waits before its effect.
        case notStarted
        /// Its effect may have begun.
        case started
        /// Given back before it started: it must not start now.
        case givenBack
    }

    private var phases: [JobKey: (attempt: Int, phase: Phase)] = [:]

    /// The attempt was claimed.
    mutating func claimed(_ key: JobKey, attempt: Int) {
        phases[key] = (attempt, .notStarted)
    }

    /// The attempt's handler is called (`true`), or says it waits before its effect
    /// (`false`). Returns `false` if the attempt was given back: it must not go on.
    mutating func mark(_ key: JobKey, attempt: Int, started: Bool) -> Bool {
        guard let current = phases[key], current.attempt == attempt else { return true }
        guard current.phase != .givenBack else { return false }
        phases[key] = (attempt, started ? .started : .notStarted)
        return true
    }

    /// The attempt returned: forgotten.
    mutating func ended(_ key: JobKey, attempt: Int) {
        if phases[key]?.attempt == attempt { phases[key] = nil }
    }

    /// Of `keys`, given back now, those that had started. The others can no longer start.
    mutating func giveBack(_ keys: [JobKey]) -> Set<JobKey> {
        var started: Set<JobKey> = []
        for key in keys {
            guard let current = phases[key] else {
                // Not tracked (never claimed through this queue): taken as started.
                started.insert(key)
                continue
            }
            if current.phase == .started {
                started.insert(key)
            } else {
                phases[key] = (current.attempt, .givenBack)
            }
        }
        return started
    }
}

/// ``AttemptStartsState`` behind the project's lock, shared by a queue and its handlers'
/// contexts.
final class AttemptStarts: Sendable {
    private let state = Locked(AttemptStartsState())

    func claimed(_ key: JobKey, attempt: Int) {
        state.withLock { $0.claimed(key, attempt: attempt) }
    }

    /// See ``AttemptStartsState/mark(_:attempt:started:)``.
    func mark(_ key: JobKey, attempt: Int, started: Bool) -> Bool {
        state.withLock { $0.mark(key, attempt: attempt, started: started) }
    }

    func ended(_ key: JobKey, attempt: Int) {
        state.withLock { $0.ended(key, attempt: attempt) }
    }

    /// See ``AttemptStartsState/giveBack(_:)``.
    func giveBack(_ keys: [JobKey]) -> Set<JobKey> {
        state.withLock { $0.giveBack(keys) }
    }
}
