import Foundation
import Orchestra
import OrchestraHTTP

extension Duration {
    /// The duration in milliseconds, as a `Double`.
    var inMilliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }
}

/// Small text helpers for aligned, Foundation-free output.
enum Format {
    /// `api.test:443 · 600 requests at 20/s · server: 10/s · 3 × 429, 1 pause`: a host's pace,
    /// for `run`'s summary and `status` alike. The rates are in words (`nil`: not limited); the
    /// server's rate shows only when it differs, 429s and pauses only when there were some.
    static func hostPace(
        _ host: String, requests: Int, rate: String?, effectiveRate: String?, tooManyRequests: Int, pauses: Int
    ) -> String {
        var line = "\(TerminalText.safe(host)) · \(count(requests, "request"))"
        if let rate { line += " at \(TerminalText.safe(rate))" }
        if effectiveRate != rate { line += " · server: \(effectiveRate.map(TerminalText.safe) ?? "not limited")" }
        if tooManyRequests > 0 { line += " · \(tooManyRequests) × 429" }
        if pauses > 0 { line += ", \(count(pauses, "pause"))" }
        return line
    }

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

    /// How an error reads in the command's output: short, naming the Orchestra error, and
    /// never Foundation's `Error Domain=… Code=… UserInfo={…}` dump (a URL error says what
    /// failed and where, a file error the file and the reason).
    static func error(_ error: any Error) -> String {
        switch error {
        case let error as CallbackError:
            return "CallbackError.\(error.code)"
        case let error as TimeoutError:
            return error.timeout.map { "TimeoutError: timed out after \(milliseconds($0))" }
                ?? "TimeoutError: deadline passed"
        case is CancellationError:
            return "cancelled"
        case let error as URLError:
            return urlError(error)
        case let error as HTTPTransportError:
            return TerminalText.quoted(error.message)
        default:
            break
        }
        let error = error as NSError
        switch error.domain {
        case NSURLErrorDomain: return urlError(URLError(_nsError: error))
        case NSCocoaErrorDomain: return fileError(error)
        case NSPOSIXErrorDomain: return posixReason(Int32(error.code))
        default: return TerminalText.quoted("\(error)")
        }
    }

    /// `cannot write '/tmp/t/album.trace.json': is a directory`.
    private static func fileError(_ error: NSError) -> String {
        let path = error.userInfo[NSFilePathErrorKey] as? String ?? (error.userInfo[NSURLErrorKey] as? URL)?.path
        let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError
        let reason =
            underlying.flatMap { $0.domain == NSPOSIXErrorDomain ? posixReason(Int32($0.code)) : nil }
            ?? "file error \(error.code)"
        let action =
            switch error.code {
            case 256..<512, 4: "cannot read"
            case 512..<768: "cannot write"
            default: "cannot use"
            }
        return path.map { "\(action) '\(TerminalText.quoted($0))': \(reason)" } ?? "\(action) a file: \(reason)"
    }

    /// `is a directory`, `permission denied`: the C library's words for `errno`.
    private static func posixReason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
