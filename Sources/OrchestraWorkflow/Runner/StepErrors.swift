import Foundation
import Orchestra
import OrchestraHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How errors read in a step's report: the reason, in words, with the host involved.
enum StepErrors {
    /// `connection refused by 127.0.0.1:1`, `cannot resolve host example.invalid`, …
    ///
    /// A transport's message, or an error this does not know, may quote a value of any size
    /// (a host from a capture, a server's text): it is shortened to its first characters.
    static func describe(_ error: any Error, authority: String) -> String {
        switch error {
        case let error as StepFailure:
            return error.message
        case let error as TimeoutError:
            return "timed out after \(format(error.timeout ?? .zero))"
        case let error as AuthenticationError:
            let reason = error.underlying.map { describe($0, authority: authority) } ?? error.message
            return "authentication failed: \(reason)"
        case let error as HTTPTransportError:
            return MessageValue.shortened(error.message, limit: 2 * MessageValue.limit)
        case let error as RetryError where error.code == .serverDelayTooLong:
            return
                "the server asked to wait \(seconds(error.requestedDelay)) (Retry-After), more than max_delay \(format(error.limit))"
        case let error as URLError:
            // From a transport that does not map its errors: the same words URLSessionTransport uses.
            return describe(URLSessionTransport.mapped(error, authority: authority), authority: authority)
        case is CancellationError:
            return "cancelled"
        default:
            let text = "\(error)"
            if text.localizedCaseInsensitiveContains("refused") { return "connection refused by \(short: authority)" }
            return MessageValue.shortened(text, limit: 2 * MessageValue.limit)
        }
    }

    /// The message of a request reported "may have been sent": in flight when `stopped` (`run
    /// 2`, `its worker`) stopped, and not safe to send twice, so not sent again.
    static func maybeSent(method: String, stopped: String) -> String {
        "may have been sent: in flight when \(stopped) stopped, and a \(method) is not safe to send twice, so it was not sent again (check the server; --resend-uncertain sends it)"
    }

    /// The first 200 characters of a body, on one line, decoded by the `charset` of its
    /// content type (``HTTPBodyText``; a charset it does not know is said after the text); for a
    /// body that is not text (by its content type, a NUL, or bytes that are not UTF-8 when it is
    /// read as UTF-8), its size and type instead.
    static func snippet(_ body: Data, contentType: String? = nil) -> String {
        guard !body.isEmpty else { return "(empty body)" }
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        let decoded = HTTPBodyText(decoding: body.prefix(800), contentType: contentType)
        let text = decoded.text
        // The last character may be one cut in half by the prefix. Read as UTF-8 for want of
        // a known charset, replacement characters are expected.
        let notUTF8 = decoded.charset == .utf8 && decoded.unknownCharset == nil && text.dropLast().contains("\u{FFFD}")
        if notUTF8 || text.contains("\0") || !(type.map(Self.isTextual) ?? true) {
            return "(\(body.count) bytes of \(type ?? "binary data"))"
        }
        // Within a run, the secrets are masked before the cut: read past it by the longest
        // form of a secret, so that one straddling it is masked whole.
        let redactor = Redactor.current.flatMap { $0.isEmpty ? nil : $0 }
        let read =
            redactor.map { HTTPBodyText(decoding: body.prefix(800 + $0.longestMatch), contentType: contentType).text }
            ?? text
        let line = read.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        let note = decoded.note.map { " (\($0))" } ?? ""
        if let redactor {
            let (start, isCut) = redactor.redactedPrefix(of: line, limit: 200, in: .characters)
            return (isCut ? start + "…" : start) + note
        }
        return (line.count > 200 ? String(line.prefix(200)) + "…" : line) + note
    }

    /// Whether a media type (`text/html`, `application/problem+json`…) is text worth quoting.
    static func isTextual(_ type: String) -> Bool {
        type.hasPrefix("text/")
            || ["json", "xml", "javascript", "x-www-form-urlencoded"].contains { type.contains($0) }
    }

    /// A delay a server asked for, in whole seconds as it gives them (`86400 s`, rounded up),
    /// or in milliseconds below one second.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 else { return format(duration) }
        return "\(attoseconds > 0 && seconds < .max ? seconds + 1 : seconds) s"
    }

    /// `500 ms`, `5 s`, `1.5 s`, `2 min`.
    static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = Double(seconds) * 1_000 + Double(attoseconds) / 1e15
        if milliseconds < 1_000 { return "\(Int(milliseconds.rounded())) ms" }
        if milliseconds >= 7_200_000, milliseconds.truncatingRemainder(dividingBy: 3_600_000) == 0 {
            return "\(Int(milliseconds / 3_600_000)) h"
        }
        if milliseconds >= 120_000, milliseconds.truncatingRemainder(dividingBy: 60_000) == 0 {
            return "\(Int(milliseconds / 60_000)) min"
        }
        let value = milliseconds / 1_000
        return value == value.rounded() ? "\(Int(value)) s" : "\(String(format: "%.1f", value)) s"
    }
}
