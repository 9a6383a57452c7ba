public import Orchestra

/// A change the coordinator made to a host's pace because of what the server said: a pause
/// after a 429 or 503 with `Retry-After` (or an announcement that nothing is left of the
/// quota), or a new rate from the server's `RateLimit` header fields.
///
/// Delivered to ``HTTPCoordinator/Configuration/onRateEvent``; the command prints it with
/// `--verbose` and records it in its trace.
public struct HTTPRateEvent: Sendable, Hashable, CustomStringConvertible {
    /// What changed.
    public enum Change: Sendable, Hashable {
        /// Nothing is sent to the host for this long (at most the retry policy's
        /// `maximumServerDelay`).
        case paused(Duration)
        /// The host's rate is now `to` (`nil`: not limited), from `from`.
        case rateChanged(from: Rate?, to: Rate?)
    }

    /// The host, as the coordinator keys it: `https://api.example.com:443`, or the
    /// ``HTTPCoordinator/Configuration/hostRates`` key that matched it.
    public var host: String
    /// What changed.
    public var change: Change
    /// Why, in the server's words: `429 with Retry-After: 2`, or the `RateLimit` fields it
    /// sent (each value at most 200 characters).
    public var reason: String

    /// An event; see each property.
    public init(host: String, change: Change, reason: String) {
        self.host = host
        self.change = change
        self.reason = reason
    }

    /// `pausing https://api.test:443 for 2 s (429 with Retry-After: 2)` or
    /// `rate of https://api.test:443 now 10/s, was not limited (RateLimit: …)`.
    public var description: String {
        switch change {
        case .paused(let duration):
            "pausing \(host) for \(HTTPRateEvent.text(duration)) (\(reason))"
        case .rateChanged(let from, let to):
            "rate of \(host) now \(to.map(HTTPRateEvent.text) ?? "not limited"), was \(from.map(HTTPRateEvent.text) ?? "not limited") (\(reason))"
        }
    }

    /// `2 s`, `1.5 s`, `250 ms`.
    static func text(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds < 1_000 { return "\(milliseconds) ms" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000) s" }
        return "\(Double(milliseconds) / 1_000) s"
    }

    /// `30`, `2.5`, `0.33`: at most two decimals, none when whole.
    private static func number(_ value: Double) -> String {
        // A server's quota saturates at Int.max: shown as a Double, never converted back.
        guard value < 1e15 else { return "\(value)" }
        let hundredths = (value * 100).rounded()
        if hundredths.truncatingRemainder(dividingBy: 100) == 0 { return "\(Int(hundredths / 100))" }
        return "\(hundredths / 100)"
    }

    /// `20/s`, or `2.5/s` for a rate that is not whole per second (`5 per 2 s`).
    package static func text(_ rate: Rate) -> String {
        switch rate.interval {
        case .seconds(1), .seconds(60), .seconds(3_600): return rate.description
        default:
            let perSecond = rate.permitsPerSecond
            return perSecond >= 1 ? "\(number(perSecond))/s" : "\(number(perSecond * 60))/min"
        }
    }
}

/// What the coordinator knows of one host's pace: for `orchestra status`, `--output json` and
/// diagnostics (``HTTPCoordinator/hostRates``).
public struct HTTPHostRate: Sendable, Hashable {
    /// The host, keyed as ``HTTPRateEvent/host``.
    public var host: String
    /// Requests started to it (attempts, retries and redirects included).
    public var requestsSent: Int
    /// The rate the configuration gives it (`nil`: not limited).
    public var configuredRate: Rate?
    /// The rate it is sent at now: the configured one, or what the server's `RateLimit`
    /// fields lowered it to (`nil`: not limited).
    public var effectiveRate: Rate?
    /// Its 429 responses.
    public var tooManyRequests: Int
    /// The pauses its `Retry-After`s or exhausted quotas caused.
    public var pauses: Int

    /// A host's figures; see each property.
    public init(
        host: String, requestsSent: Int, configuredRate: Rate?, effectiveRate: Rate?, tooManyRequests: Int,
        pauses: Int
    ) {
        self.host = host
        self.requestsSent = requestsSent
        self.configuredRate = configuredRate
        self.effectiveRate = effectiveRate
        self.tooManyRequests = tooManyRequests
        self.pauses = pauses
    }
}
