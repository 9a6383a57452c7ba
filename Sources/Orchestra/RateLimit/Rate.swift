/// How many permits a ``RateLimiter`` grants per interval: `.perSecond(50)`, `.perHour(5000)`,
/// `.per(5, .seconds(10))`.
///
/// ```swift
/// let limiter = RateLimiter(rate: .per(5, .seconds(10)), burst: 5)   // 5 at once, then one every 2 s
/// ```
///
/// A rate of *count* per *interval* grants one permit every ``spacing`` (`interval / count`).
/// A spacing longer than about 136 years (``maximumSpacing``) is treated as that long, so no
/// rate makes the limiter's time arithmetic overflow.
public struct Rate: Hashable, Sendable, CustomStringConvertible {
    /// The number of permits per ``interval``; at least 1.
    public let count: Int
    /// The interval in which ``count`` permits are granted; longer than zero.
    public let interval: Duration

    /// The longest ``spacing`` a limiter uses: 2³² seconds, about 136 years. A slower rate is
    /// this one, which in practice never grants a second permit.
    public static let maximumSpacing = Duration.seconds(Int64(1) << 32)

    /// `count` permits per `interval`. Both must be positive: a count below 1 or an interval
    /// of zero or less is a programmer error and traps, naming the value.
    public static func per(_ count: Int, _ interval: Duration) -> Rate {
        Rate(count: count, interval: interval, caller: "Rate.per(_:_:)")
    }

    /// `count` permits per second; `count` must be at least 1.
    public static func perSecond(_ count: Int) -> Rate {
        Rate(count: count, interval: .seconds(1), caller: "Rate.perSecond(_:)")
    }

    /// `count` permits per minute; `count` must be at least 1.
    public static func perMinute(_ count: Int) -> Rate {
        Rate(count: count, interval: .seconds(60), caller: "Rate.perMinute(_:)")
    }

    /// `count` permits per hour; `count` must be at least 1.
    public static func perHour(_ count: Int) -> Rate {
        Rate(count: count, interval: .seconds(3_600), caller: "Rate.perHour(_:)")
    }

    private init(count: Int, interval: Duration, caller: String) {
        checkArgument(count >= 1, "\(caller): count must be 1 or more, got \(count)")
        checkArgument(interval > .zero, "\(caller): interval must be longer than zero, got \(interval)")
        self.count = count
        self.interval = interval
    }

    /// The time between two permits once the burst is used: `interval / count`, at most
    /// ``maximumSpacing``. Zero for a rate too fast to measure (more than 10¹⁸ a second),
    /// which then limits nothing.
    public var spacing: Duration {
        min(interval / count, Self.maximumSpacing)
    }

    /// `50/s`, `30/min`, `5000/h`, or `5 per 10.0 seconds`.
    public var description: String {
        switch interval {
        case .seconds(1): "\(count)/s"
        case .seconds(60): "\(count)/min"
        case .seconds(3_600): "\(count)/h"
        default: "\(count) per \(interval)"
        }
    }
}
