/// One ``RateLimiter`` per key, created when a key is first used, from a rule that gives each
/// key its rate: "at most 5,000 requests an hour to api.github.com, 20 a second to each other
/// host".
///
/// ```swift
/// let hosts = KeyedRateLimiter<String>(rates: ["api.github.com": .perHour(5000)], default: .perSecond(20))
///
/// try await hosts.acquire(url.host ?? "")      // waits for that host's next permit only
/// ```
///
/// Keys are independent: a key that waits holds up no other. A key whose rule gives `nil`
/// is not limited. Each key's bucket behaves as one ``RateLimiter`` with the same `burst` and
/// clock: FIFO among the key's waiters, and the same cancellation (a cancelled waiter throws
/// `CancellationError`, took nothing and delays nobody).
///
/// Memory stays bounded however many keys pass: a bucket that is full again with nobody
/// waiting (a key idle for at least `burst` × its spacing) behaves exactly like a new one, so
/// it is dropped, and created again from the rule if the key comes back. The buckets kept are
/// at most about twice those still refilling or waited on, plus 64.
public final class KeyedRateLimiter<Key: Hashable & Sendable>: Sendable {
    private let rule: @Sendable (Key) -> Rate?
    private let makeLimiter: @Sendable (Rate) -> RateLimiter
    private let registry = Locked(RateLimiterRegistry<Key, RateLimiter>())

    /// Creates a limiter that asks `rule` for a key's rate when the key has no bucket (its
    /// first use, or after its bucket was dropped as idle).
    ///
    /// - Parameters:
    ///   - burst: Each key's burst (see ``RateLimiter/burst``); at least 1.
    ///   - clock: The clock every key's spacing is measured on.
    ///   - rule: The rate for a key, or `nil` for none. Called outside the limiter's lock, and
    ///     again each time an unlimited key is used: keep it quick.
    public init<C: Clock>(
        burst: Int = 1, clock: C = ContinuousClock(), rule: @escaping @Sendable (Key) -> Rate?
    ) where C.Duration == Duration {
        checkArgument(burst >= 1, "KeyedRateLimiter(burst:): burst must be 1 or more, got \(burst)")
        self.rule = rule
        self.makeLimiter = { rate in RateLimiter(rate: rate, burst: burst, clock: clock) }
    }

    /// Creates a limiter with a rate for some keys and `default` for the others (`nil`: the
    /// others are not limited).
    public convenience init<C: Clock>(
        rates: [Key: Rate], default defaultRate: Rate? = nil, burst: Int = 1, clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.init(burst: burst, clock: clock) { key in rates[key] ?? defaultRate }
    }

    /// Takes a permit for `key`, suspending until its bucket grants one; other keys are not
    /// affected.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it is granted a permit
    ///   (including when it is already cancelled at the call, whatever the key's rate); it then
    ///   took nothing.
    nonisolated(nonsending) public func acquire(_ key: Key) async throws {
        if Task.isCancelled { throw CancellationError() }
        switch registry.withLock({ $0.lookUp(key, pinning: true, grantsNow: Self.grantsNow) }) {
        case .granted: return
        case .wait(let limiter): try await wait(on: limiter, for: key)
        case .unknown:
            guard let rate = rule(key) else { return }
            let created = makeLimiter(rate)
            let lookup = registry.withLock {
                $0.insert(created, for: key, pinning: true, grantsNow: Self.grantsNow, isIdle: Self.isIdle)
            }
            if case .wait(let limiter) = lookup { try await wait(on: limiter, for: key) }
        }
    }

    /// Takes a permit for `key` if its bucket has one free now and nobody waits for it,
    /// without suspending. A key without a rate always gets one.
    ///
    /// - Returns: `true` if a permit was taken.
    public func tryAcquire(_ key: Key) -> Bool {
        switch registry.withLock({ $0.lookUp(key, pinning: false, grantsNow: Self.grantsNow) }) {
        case .granted: return true
        case .wait: return false
        case .unknown:
            guard let rate = rule(key) else { return true }
            let created = makeLimiter(rate)
            let lookup = registry.withLock {
                $0.insert(created, for: key, pinning: false, grantsNow: Self.grantsNow, isIdle: Self.isIdle)
            }
            if case .granted = lookup { return true }
            return false
        }
    }

    /// Takes a permit for `key`, then runs `body`; see ``acquire(_:)``. The permit is not
    /// given back when `body` ends: a rate counts starts.
    ///
    /// - Throws: `CancellationError` if cancelled while waiting (then `body` does not run),
    ///   or whatever `body` throws.
    nonisolated(nonsending) public func withPermit<Result>(
        for key: Key, _ body: nonisolated(nonsending) () async throws -> Result
    ) async throws -> Result {
        try await acquire(key)
        return try await body()
    }

    /// The number of keys with a bucket now (keys used recently, or waited on). For
    /// diagnostics and tests.
    public var bucketCount: Int {
        registry.withLock { $0.count }
    }

    /// The number of tasks waiting for `key` now.
    public func waitingCount(for key: Key) -> Int {
        guard let limiter = registry.withLock({ $0.limiter(for: key) }) else { return 0 }
        return limiter.waitingCount
    }

    nonisolated(nonsending) private func wait(on limiter: RateLimiter, for key: Key) async throws {
        defer { registry.withLock { $0.unpin(key) } }
        try await limiter.acquire()
    }

    private static func grantsNow(_ limiter: RateLimiter) -> Bool { limiter.tryAcquire() }
    private static func isIdle(_ limiter: RateLimiter) -> Bool { limiter.isIdle }
}
