import Foundation
import Orchestra

extension Duration {
    /// The duration in milliseconds, as a `Double`.
    var inMilliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }
}

/// Small text helpers for aligned, Foundation-free output.
enum Format {
    /// `412 ms`.
    static func milliseconds(_ duration: Duration) -> String {
        "\(Int(duration.inMilliseconds.rounded())) ms"
    }

    /// `6.4 s`, or `412 ms` under a second.
    static func wallTime(_ duration: Duration) -> String {
        let milliseconds = duration.inMilliseconds
        guard milliseconds >= 1_000 else { return self.milliseconds(duration) }
        let tenths = Int((milliseconds / 100).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// A speed factor as the user would type it: `3`, `0.5`.
    static func factor(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? "\(Int(value))" : "\(value)"
    }

    /// `text` padded with spaces on the left to `width` characters.
    static func right(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }

    /// `text` padded with spaces on the right to `width` characters.
    static func left(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// `1 request`, `3 requests`.
    static func count(_ number: Int, _ singular: String, plural: String? = nil) -> String {
        "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
    }

    /// `640 B`, `48 KB`, `2.4 MB` (decimal units, as HTTP tools print them).
    static func bytes(_ count: Int) -> String {
        switch count {
        case ..<1_000: "\(count) B"
        case ..<1_000_000: "\(Int((Double(count) / 1_000).rounded())) KB"
        default: "\(Double(Int((Double(count) / 100_000).rounded())) / 10) MB"
        }
    }

    /// `1st`, `2nd`, `3rd`, `4th`, …
    static func ordinal(_ number: Int) -> String {
        let suffix: String
        switch (number % 10, number % 100) {
        case (_, 11...13): suffix = "th"
        case (1, _): suffix = "st"
        case (2, _): suffix = "nd"
        case (3, _): suffix = "rd"
        default: suffix = "th"
        }
        return "\(number)\(suffix)"
    }

    /// `URLError.cannotConnectToHost (127.0.0.1:1)`: Linux's `URLError` descriptions say
    /// little more than the code number.
    static func urlError(_ error: URLError) -> String {
        let names: [URLError.Code: String] = [
            .cannotConnectToHost: "cannotConnectToHost (connection refused)", .timedOut: "timedOut",
            .cannotFindHost: "cannotFindHost", .networkConnectionLost: "networkConnectionLost",
            .notConnectedToInternet: "notConnectedToInternet", .badServerResponse: "badServerResponse",
            .cancelled: "cancelled", .secureConnectionFailed: "secureConnectionFailed",
        ]
        let name = names[error.code] ?? "code \(error.code.rawValue)"
        let url = error.failingURL ?? (error.userInfo[NSURLErrorFailingURLErrorKey] as? URL)
        let place = url.flatMap { url in url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } }
        return "URLError.\(name)" + (place.map { " to \($0)" } ?? "")
    }

    /// How an error reads in the demo's output: short, and naming the Orchestra error.
    static func error(_ error: any Error) -> String {
        switch error {
        case let error as CallbackError:
            "CallbackError.\(error.code)"
        case let error as TimeoutError:
            error.timeout.map { "TimeoutError: timed out after \(milliseconds($0))" } ?? "TimeoutError: deadline passed"
        case is CancellationError:
            "cancelled"
        case let error as URLError:
            urlError(error)
        default:
            "\(error)"
        }
    }
}
