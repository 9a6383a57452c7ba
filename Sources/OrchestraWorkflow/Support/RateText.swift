import Foundation
import Orchestra

/// A rate as written in a workflow file or on the command line: `20/s`, `30/min`, `5000/h`,
/// `1/day`, or a count per duration, `5/10s`.
package enum RateText {
    /// What a rate looks like, for messages.
    package static let expected = "a rate such as 20/s, 30/min, 5000/h or 5/10s"
    /// The largest count: a billion per interval.
    package static let maximumCount = 1_000_000_000

    /// The rate `text` writes, or why it is none (a message naming the problem, without the
    /// value, which the caller quotes).
    package static func parse(_ text: String) -> Result<Rate, RateTextError> {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .failure(RateTextError("must be \(expected)")) }
        let countText = parts[0].trimmingCharacters(in: .whitespaces)
        guard !countText.isEmpty, countText.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return .failure(RateTextError("must be \(expected): the count before '/' is a whole number"))
        }
        guard countText.utf8.count <= 10, let count = Int(countText), (1...maximumCount).contains(count) else {
            return .failure(RateTextError("must be \(expected): the count is 1 to \(maximumCount)"))
        }
        let unit = parts[1].trimmingCharacters(in: .whitespaces).lowercased()
        let interval: Duration
        switch unit {
        case "s", "sec", "second": interval = .seconds(1)
        case "m", "min", "minute": interval = .seconds(60)
        case "h", "hr", "hour": interval = .seconds(3_600)
        case "d", "day": interval = .seconds(86_400)
        default:
            // A count per duration: `5/10s`, at most a day.
            guard let seconds = NodeReader.parseSeconds(unit), seconds > 0, seconds <= 86_400 else {
                return .failure(
                    RateTextError("must be \(expected): after '/' comes s, min, h, day or a duration up to a day"))
            }
            interval = .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
        return .success(Rate.per(count, interval))
    }
}

/// Why a text is not a rate.
package struct RateTextError: Error, Sendable {
    package let message: String

    init(_ message: String) {
        self.message = message
    }
}
