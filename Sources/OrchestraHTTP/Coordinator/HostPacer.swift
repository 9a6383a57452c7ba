import Foundation
import HTTPTypes
import Orchestra

/// The rates of an ``HTTPCoordinator``: the overall one and each host's, and how the server's
/// answers change a host's (a pause for `Retry-After`, a new rate from `RateLimit` fields).
///
/// Each host has an entry (its figures for ``HTTPCoordinator/hostRates``) and, once it has a
/// rate or was paused, a ``RateLimiter``. A request takes its host's permit, then the overall
/// one; when both are limited the two are taken under the host's own turn (an
/// `AsyncSemaphore` of one), so that a request that got its host's permit and then waits for the
/// overall one does not let the next request to that host take a second permit meanwhile and
/// start right after it. Entries are kept for at most ``maximumHosts`` hosts: past that, a new
/// host without a configured rate is neither counted nor adapted (it is still limited overall).
final class HostPacer: Sendable {
    /// The most hosts with an entry.
    static let maximumHosts = 10_000
    /// No limit, but a limiter that can be paused: a spacing of zero limits nothing.
    static let unlimited = Rate.per(Int.max, .seconds(1))

    private struct Entry {
        var configured: Rate?
        var effective: Rate?
        var limiter: RateLimiter?
        /// Taken around the host's permit and the overall one when both are limited.
        var turn: AsyncSemaphore?
        var sent = 0
        var tooManyRequests = 0
        var pauses = 0
        /// When the last pause ends, on the coordinator's clock (time since its creation).
        var pausedUntil: Duration = .zero
    }

    private struct State {
        var entries: [String: Entry] = [:]
    }

    private let overall: RateLimiter?
    private let burst: Int
    private let adapts: Bool
    private let ratesByHost: [HTTPHostKey: Rate]
    private let perHostRate: Rate?
    private let onEvent: (@Sendable (HTTPRateEvent) -> Void)?
    private let makeLimiter: @Sendable (Rate) -> RateLimiter
    private let elapsed: @Sendable () -> Duration
    private let state = Locked(State())

    init<C: Clock>(configuration: HTTPCoordinator.Configuration, clock: C) where C.Duration == Duration {
        let burst = configuration.rateBurst
        self.burst = burst
        adapts = configuration.adaptsToServer
        overall = configuration.rate.map { RateLimiter(rate: $0, burst: burst, clock: clock) }
        ratesByHost = Dictionary(
            configuration.hostRates.compactMap { pattern, rate in HTTPHostKey(pattern: pattern).map { ($0, rate) } },
            uniquingKeysWith: { Rate.slower($0, $1)! })
        perHostRate = configuration.perHostRate
        onEvent = configuration.onRateEvent
        makeLimiter = { rate in RateLimiter(rate: rate, burst: burst, clock: clock) }
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
    }

    /// The key of a request's host: the ``HTTPCoordinator/Configuration/hostRates`` pattern
    /// that names it (`host:port` first, then `host`), else `scheme://host:port`.
    func key(scheme: String, authority: String) -> String {
        key(of: HTTPHostKey(scheme: scheme, authority: authority), scheme: scheme)
    }

    /// The key of a request to `host` over `scheme`, as ``key(scheme:authority:)``.
    func key(of host: HTTPHostKey, scheme: String) -> String {
        if !ratesByHost.isEmpty, let entry = host.entry(in: ratesByHost) { return entry.key.description }
        return "\(scheme.lowercased())://\(host)"
    }

    private func configuredRate(of key: String) -> Rate? {
        if let pattern = HTTPHostKey(pattern: key), let rate = ratesByHost[pattern] { return rate }
        return perHostRate
    }

    /// Waits for the host's permit and the overall one, then counts the request as sent.
    ///
    /// - Throws: `CancellationError`, having taken no permit it did not use.
    func acquire(_ key: String) async throws {
        let overall = self.overall
        // A request that waits for nothing (the usual one: no rate, no pause) is counted in the
        // same lock; one that waits is counted once granted, so a cancelled wait counts nothing.
        let (limiter, turn, countLater) = state.withLock { state -> (RateLimiter?, AsyncSemaphore?, Bool) in
            guard var entry = entry(key, in: &state) else { return (nil, nil, false) }
            if entry.limiter == nil, let rate = entry.configured { entry.limiter = makeLimiter(rate) }
            if entry.limiter != nil, overall != nil, entry.turn == nil { entry.turn = AsyncSemaphore(value: 1) }
            let waits = entry.limiter != nil || overall != nil
            if !waits { entry.sent += 1 }
            state.entries[key] = entry
            return (entry.limiter, entry.turn, waits)
        }
        guard countLater else {
            // Nothing to wait for but the overall rate of a host with no entry (past the cap).
            try await overall?.acquire()
            return
        }
        if let turn {
            try await turn.withPermit {
                try await limiter?.acquire()
                try await overall?.acquire()
            }
        } else {
            try await limiter?.acquire()
            try await overall?.acquire()
        }
        state.withLock { $0.entries[key]?.sent += 1 }
    }

    /// The key's entry, created with its configured rate; `nil` when there are
    /// ``maximumHosts`` entries already and the key has no configured rate.
    private func entry(_ key: String, in state: inout State) -> Entry? {
        if let entry = state.entries[key] { return entry }
        let configured = configuredRate(of: key)
        guard state.entries.count < Self.maximumHosts || configured != nil else { return nil }
        return Entry(configured: configured, effective: configured)
    }

    /// Reads a response of a request to `key`: a 429 or 503 with `Retry-After` pauses the host
    /// (at most `maximumDelay`), an exhausted quota pauses it until its reset, and the
    /// `RateLimit` fields set its rate (never above the configured one); each change is
    /// reported once.
    func observe(_ response: HTTPResponse, key: String, maximumDelay: Duration) {
        let status = response.status.code
        var events: [HTTPRateEvent] = []
        var pause: (duration: Duration, reason: String)?
        if adapts, status == 429 || status == 503, let retryAfter = HTTPCoordinator.retryAfter(response),
            retryAfter > .zero
        {
            pause = (
                min(retryAfter, maximumDelay),
                "\(status) with Retry-After: \(Self.shown(response.headerFields[.retryAfter]))"
            )
        }
        let announced = adapts ? HTTPRateLimitHeaders(response.headerFields) : nil
        if pause == nil, let announced, announced.isExhausted, let reset = announced.reset, reset > .zero {
            pause = (min(reset, maximumDelay), announced.source)
        }
        guard status == 429 || pause != nil || announced != nil else { return }
        let now = elapsed()
        let actions = state.withLock { state -> [(RateLimiter, Rate?, Duration?)] in
            guard var entry = entry(key, in: &state) else { return [] }
            defer { state.entries[key] = entry }
            var actions: [(RateLimiter, Rate?, Duration?)] = []
            if status == 429 { entry.tooManyRequests += 1 }
            if let pause, pause.duration > .zero {
                let limiter = limiter(of: &entry)
                actions.append((limiter, nil, pause.duration))
                let until = now + pause.duration
                // Reported when it ends a second or more after the pause already set: the other
                // 429s of the same burst say nothing new.
                if until > entry.pausedUntil + .seconds(1) {
                    entry.pauses += 1
                    events.append(HTTPRateEvent(host: key, change: .paused(pause.duration), reason: pause.reason))
                }
                entry.pausedUntil = max(entry.pausedUntil, until)
            }
            if let announced, let target = Rate.slower(entry.configured, announced.sustainableRate),
                Self.differs(target, entry.effective)
            {
                let limiter = limiter(of: &entry)
                events.append(
                    HTTPRateEvent(
                        host: key, change: .rateChanged(from: entry.effective, to: target), reason: announced.source))
                entry.effective = target
                actions.append((limiter, target, nil))
            }
            return actions
        }
        for (limiter, rate, pause) in actions {
            if let rate { limiter.setRate(rate) }
            if let pause { limiter.pause(for: pause) }
        }
        if let onEvent { for event in events { onEvent(event) } }
    }

    /// Each host's figures, by host.
    var hostRates: [HTTPHostRate] {
        state.withLock { state in
            state.entries.map { key, entry in
                HTTPHostRate(
                    host: key, requestsSent: entry.sent, configuredRate: entry.configured,
                    effectiveRate: entry.effective, tooManyRequests: entry.tooManyRequests, pauses: entry.pauses)
            }
        }.sorted { $0.host < $1.host }
    }

    private func limiter(of entry: inout Entry) -> RateLimiter {
        if let limiter = entry.limiter { return limiter }
        let limiter = makeLimiter(entry.effective ?? Self.unlimited)
        entry.limiter = limiter
        if overall != nil { entry.turn = AsyncSemaphore(value: 1) }
        return limiter
    }

    /// Whether `rate` differs from `current` by more than a tenth: smaller changes (a quota's
    /// remaining count going down by one with each response) are not worth an adjustment.
    static func differs(_ rate: Rate, _ current: Rate?) -> Bool {
        guard let current else { return true }
        let ratio = rate.permitsPerSecond / current.permitsPerSecond
        return ratio < 0.9 || ratio > 1.1
    }

    private static func shown(_ value: String?) -> String {
        guard let value else { return "" }
        return value.count > 200 ? String(value.prefix(200)) + "…" : value
    }
}

extension HTTPHostKey {
    /// The host a pacer's key names (`https://api.test:443`, the `host` of an ``HTTPRateEvent``
    /// or an ``HTTPHostRate``); `nil` for a ``HTTPCoordinator/Configuration/hostRates`` key.
    package init?(pacedHost host: String) {
        guard let separator = host.range(of: "://") else { return nil }
        self.init(scheme: String(host[..<separator.lowerBound]), authority: String(host[separator.upperBound...]))
    }
}
