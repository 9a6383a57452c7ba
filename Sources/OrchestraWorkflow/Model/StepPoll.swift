import Foundation

/// `until:` of a step: its request is sent again until its checks hold (the status is one
/// `expect` accepts, every `assert:` passes and every capture can be read), waiting
/// ``delay(after:)`` between attempts.
///
/// ```yaml
/// - id: job
///   url: "{{vars.base}}/jobs/{{start.id}}"
///   until: { interval: { initial: 1s, multiplier: 2, max: 30s }, max_attempts: 20 }
///   timeout: 5m                 # over the whole poll
///   assert:
///     - $.status: { equals: done }
/// ```
///
/// Bounds: ``maxAttempts`` if given, and the step's `timeout`, which with `until:` bounds the
/// whole poll (each attempt gets what is left of it): a wait that would end after it is not
/// started. The step's `retry:` still applies to each attempt (a failed connection, a 5xx,
/// a 429): a request that fails after its retries ends the poll at once; a response that does
/// not pass the checks is polled again. The captures come from the response that passed.
/// Waits are between requests, so a poll holds no slot of the run's `limit` while it waits.
package struct StepPoll: Sendable, Hashable {
    /// The wait after the first attempt; 1 s by default.
    package var interval: Duration = .seconds(1)
    /// Each wait is the previous one times this (1: a fixed interval).
    package var multiplier: Double = 1
    /// The longest wait, with a multiplier; `nil`: ``maximumInterval``.
    package var maxInterval: Duration?
    /// `max_attempts:`; `nil`: only the step's `timeout` bounds the poll.
    package var maxAttempts: Int?
    /// Where the `until` field is, for messages.
    package var location: SourceLocation?

    /// The longest wait between two attempts a file may give: 1 h.
    package static let maximumInterval: Duration = .seconds(3_600)
    /// The most attempts a file may give.
    package static let maximumAttempts = 100_000
    /// The largest multiplier a file may give.
    package static let maximumMultiplier = 10.0
    /// The most attempts a report lists (the last ones); ``StepReport/pollCount`` counts them all.
    package static let reportedAttempts = 100

    package init(
        interval: Duration = .seconds(1), multiplier: Double = 1, maxInterval: Duration? = nil, maxAttempts: Int? = nil
    ) {
        self.interval = interval
        self.multiplier = multiplier
        self.maxInterval = maxInterval
        self.maxAttempts = maxAttempts
    }

    /// The wait after attempt `attempt` (from 1): `interval × multiplier^(attempt - 1)`, at
    /// most ``maxInterval`` (or ``maximumInterval``). Computed in seconds and clamped before
    /// it becomes a duration, so no attempt number overflows it.
    package func delay(after attempt: Int) -> Duration {
        let cap = min(maxInterval ?? Self.maximumInterval, Self.maximumInterval)
        guard multiplier > 1, attempt > 1 else { return min(interval, cap) }
        let base = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        let capSeconds = Double(cap.components.seconds) + Double(cap.components.attoseconds) / 1e18
        // At most 64 doublings matter before the cap: the exponent is bounded first.
        let exponent = Double(min(attempt - 1, 200))
        let seconds = min(base * Foundation.pow(multiplier, exponent), capSeconds)
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// `every 1 s, at most 20 attempts` for diagrams and messages.
    package var summary: String {
        var text =
            multiplier > 1
            ? "every \(StepErrors.format(interval)) ×\(Self.number(multiplier))"
                + (maxInterval.map { " up to \(StepErrors.format($0))" } ?? "")
            : "every \(StepErrors.format(interval))"
        if let maxAttempts { text += ", at most \(maxAttempts) attempts" }
        return text
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
