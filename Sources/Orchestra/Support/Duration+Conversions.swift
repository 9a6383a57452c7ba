extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds (truncated), saturating at `Int64.min` and
    /// `Int64.max` (about ±292 years) instead of trapping: for storing a duration as a number.
    package var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflowAgain else { return attoseconds < 0 ? .min : .max }
        return sum
    }

    /// `seconds` rounded to whole nanoseconds, so 0.1 × 3 is 300 ms and not 300.000000000000004.
    /// Saturates at about ±292 years instead of trapping; NaN is zero.
    static func wholeNanoseconds(_ seconds: Double) -> Duration {
        let nanoseconds = (seconds * 1e9).rounded()
        guard !nanoseconds.isNaN else { return .zero }
        guard abs(nanoseconds) < 9.2e18 else { return .nanoseconds(nanoseconds < 0 ? Int64.min : Int64.max) }
        return .nanoseconds(Int64(nanoseconds))
    }
}
