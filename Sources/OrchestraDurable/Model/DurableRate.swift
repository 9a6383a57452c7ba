import Foundation
import Orchestra

/// How often the jobs of a run that use a named resource may start: at most `rate`, with
/// `burst` of them at once after a quiet spell. Given per resource with
/// ``DurableQueue/open(runID:limit:resourceLimits:resourceRates:failurePolicy:version:)`` or
/// ``DurableQueue/submit(_:runID:limit:resourceLimits:resourceRates:failurePolicy:)``.
///
/// ```swift
/// try await queue.open(
///     runID: "crawl", limit: 32, resourceLimits: ["api.github.com": 8],
///     resourceRates: ["api.github.com": DurableRate(.perSecond(30), burst: 5)])
/// ```
///
/// The rule is the one of `RateLimiter` (a generic cell rate algorithm), enforced in the
/// store's claim: a job that uses the resource is claimed only when the resource's next start
/// time has come, and claiming it moves that time on by the rate's spacing. Every worker over a
/// shared store claims through the same row, so the rate holds across all of them together:
/// three workers on a run with `30/s` start 30 jobs a second in all, not 90. In any window of
/// *W*, at most `burst` + *W* × rate jobs of the resource start. A job given back (a lost lease,
/// a graceful stop) or retried starts again under the rule: a resend is a request too.
public struct DurableRate: Sendable, Hashable {
    /// How many starts per interval.
    public var rate: Rate
    /// How many may start at once after a quiet spell; at least 1.
    public var burst: Int

    /// `rate` with `burst` starts at once at most (1: evenly spaced).
    public init(_ rate: Rate, burst: Int = 1) {
        self.rate = rate
        self.burst = burst
    }

    /// The time between two starts once the burst is used, in nanoseconds: `Rate/spacing`.
    var spacingNanoseconds: Int64 { rate.spacing.saturatingNanoseconds }
}

/// Nanoseconds since 1970, as the stores keep the paces of resources with a rate
/// (`ClaimPlanner.Pace`): milliseconds are too coarse for 30 starts a second.
package enum Nanos {
    /// `date` in nanoseconds since 1970, rounded to the microsecond: a `Date` of this century
    /// holds about a quarter of a microsecond, so a date reached by adding seconds to another
    /// (`wallClockStart` plus a clock's reading) is off in its last bits, and rounding it to
    /// the microsecond gives back the instant meant. Saturates (a date past 2262 is that year).
    package static func of(_ date: Date) -> Int64 {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard micros.isFinite, let whole = Int64(exactly: micros) else {
            return micros < 0 ? Int64.min : Int64.max
        }
        let (value, overflow) = whole.multipliedReportingOverflow(by: 1_000)
        return overflow ? (whole < 0 ? Int64.min : Int64.max) : value
    }

    /// The date of `nanoseconds`, rounded up to the next whole millisecond: a worker sleeps to
    /// the millisecond, and waking before the time would only find the job still held.
    package static func dateRoundedUp(_ nanoseconds: Int64) -> Date {
        let (millis, rest) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000)
        return Date(timeIntervalSince1970: Double(rest > 0 ? millis + 1 : millis) / 1000)
    }
}

extension DurableRate {
    /// The rate a store keeps as `count` starts per `intervalNanoseconds`, `burst` at once;
    /// `nil` for a resource without a rate (a pause only) or values no rate has.
    package init?(storedCount count: Int?, intervalNanoseconds interval: Int64?, burst: Int?) {
        guard let count, let interval, count >= 1, interval > 0 else { return nil }
        self.init(.per(count, .nanoseconds(interval)), burst: max(1, burst ?? 1))
    }

    /// The rate's interval in nanoseconds, as a store keeps it: at least 1 (an interval shorter
    /// than a nanosecond is one).
    package var intervalNanoseconds: Int64 { max(1, rate.interval.saturatingNanoseconds) }
}
