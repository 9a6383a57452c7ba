/// The buckets of a ``KeyedRateLimiter``, one per key in use, behind its lock; pure apart from
/// the two operations on a bucket it is given (`grantsNow`, `isIdle`), which take only the
/// bucket's own lock.
///
/// A bucket is *pinned* while a caller waits on it outside the lock, so it is never dropped
/// under a waiter (a new bucket for the same key would then grant as much again). A bucket
/// that is not pinned and idle (full again, nobody waiting) behaves exactly like a new one, so
/// it can be dropped: a sweep drops all such buckets whenever the count reaches twice what the
/// last sweep left (64 at least). Memory therefore follows the keys used within about one
/// burst's refill time, not every key ever seen; each sweep costs O(buckets), amortised O(1)
/// per new bucket.
struct RateLimiterRegistry<Key: Hashable, Limiter> {
    fileprivate struct Entry {
        var limiter: Limiter
        /// Callers waiting on the bucket outside the lock.
        var pins: Int
    }

    /// What a caller does after looking its key up.
    enum Lookup {
        /// Granted a permit at once.
        case granted
        /// No permit now: wait on this bucket (pinned if asked; ``unpin(_:)`` the key after the
        /// wait).
        case wait(Limiter)
        /// No bucket for the key: ask the rule (outside the lock), then
        /// ``insert(_:for:pinning:grantsNow:isIdle:)``.
        case unknown
    }

    /// The fewest buckets at which a sweep runs.
    static var minimumSweep: Int { 64 }

    private var entries: [Key: Entry] = [:]
    private var sweepAt = minimumSweep

    /// The number of buckets kept now.
    var count: Int { entries.count }

    /// Grants at once from the key's bucket, or returns it for a wait (pinned if `pinning`).
    mutating func lookUp(_ key: Key, pinning: Bool, grantsNow: (Limiter) -> Bool) -> Lookup {
        guard let entry = entries[key] else { return .unknown }
        return admit(key, entry.limiter, pinning: pinning, grantsNow: grantsNow)
    }

    /// Adds `limiter` as the key's bucket, unless another caller added one since the lookup
    /// (then that one is used), and grants from it or pins it.
    mutating func insert(
        _ limiter: Limiter, for key: Key, pinning: Bool, grantsNow: (Limiter) -> Bool, isIdle: (Limiter) -> Bool
    ) -> Lookup {
        if let entry = entries[key] { return admit(key, entry.limiter, pinning: pinning, grantsNow: grantsNow) }
        // Swept before the new bucket is in: a new bucket is idle, and must not be dropped.
        if entries.count + 1 >= sweepAt { sweep(isIdle: isIdle) }
        entries[key] = Entry(limiter: limiter, pins: 0)
        return admit(key, limiter, pinning: pinning, grantsNow: grantsNow)
    }

    /// A caller that waited on the key's bucket is done with it.
    mutating func unpin(_ key: Key) {
        entries[key]?.pins -= 1
    }

    /// The key's bucket, if it has one now.
    func limiter(for key: Key) -> Limiter? { entries[key]?.limiter }

    private mutating func admit(
        _ key: Key, _ limiter: Limiter, pinning: Bool, grantsNow: (Limiter) -> Bool
    ) -> Lookup {
        if grantsNow(limiter) { return .granted }
        if pinning { entries[key]?.pins += 1 }
        return .wait(limiter)
    }

    private mutating func sweep(isIdle: (Limiter) -> Bool) {
        entries = entries.filter { $0.value.pins > 0 || !isIdle($0.value.limiter) }
        sweepAt = max(Self.minimumSweep, 2 * (entries.count + 1))
    }
}

extension RateLimiterRegistry: Sendable where Key: Sendable, Limiter: Sendable {}
extension RateLimiterRegistry.Entry: Sendable where Key: Sendable, Limiter: Sendable {}
