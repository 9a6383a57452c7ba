import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

/// Replaces secrets with `***` in what a run shows: reports, traces, `--verbose` output and
/// error messages.
///
/// The secrets are the values of the variables a workflow lists under `secrets:`, and what the
/// run learns is secret as it goes (``learn(_:)``): the `auth:` block's tokens and the other
/// credentials of its login and refresh responses, and the output of every filter applied to a
/// value that holds a secret (`{{vars.password | base64}}`). Each is found in every form it is
/// written in (``SecretMatcher``): percent-, form- and JSON-escaped (`\u0073`), as HTML
/// character references, in hex and in base64. The values of ``sensitiveHeaders`` are redacted
/// by name, whatever they hold.
///
/// Masking comes before any cut: ``redactedPrefix(of:limit:in:)`` masks, then keeps the first
/// characters, and never splits a mask; ``MessageValue/shortened(_:limit:)`` uses it with the
/// ``current`` redactor, which the runner sets for the run's tasks, so that a message built deep
/// in the run never quotes the first half of a secret.
///
/// One redactor is shared by everything that shows a run (the steps, the auth block, the
/// `--verbose` log): a secret learned by one is masked by all from then on.
///
/// ```swift
/// let redactor = Redactor(secrets: ["s3cret"])
/// redactor.redact("http://x.test/?key=s3cret")    // "http://x.test/?key=***"
/// redactor.learn("tok-42")                         // a token a login returned
/// redactor.redact(#"{"echo":"\u0074ok-42"}"#)      // {"echo":"***"}
/// ```
package final class Redactor: Sendable {
    /// What a secret is replaced with.
    package static let mask = "***"

    /// Headers whose values are always redacted: credentials and session cookies.
    package static let sensitiveHeaders: Set<HTTPField.Name> = [
        .authorization, .proxyAuthorization, .cookie, .setCookie,
    ]

    /// The redactor of the run the current task belongs to: set by the runner around each
    /// step, read by ``MessageValue/shortened(_:limit:)`` (mask, then cut) and by the template
    /// filters (their output of a secret is a secret).
    @TaskLocal package static var current: Redactor?

    private let matcher: Locked<SecretMatcher>

    /// A redactor of `secrets` (empty values are ignored).
    package init(secrets: some Sequence<String>) {
        var matcher = SecretMatcher()
        for secret in secrets { matcher.add(secret) }
        self.matcher = Locked(matcher)
    }

    /// Whether it has no secret (``redact(_:)`` returns its argument).
    package var isEmpty: Bool { matcher.withLock { $0.isEmpty } }

    /// The most bytes one occurrence of a secret (in any form) can cover: how far past a cut
    /// ``redactedPrefix(of:limit:in:)`` reads.
    package var longestMatch: Int { matcher.withLock { $0.longestMatch } }

    /// The fewest characters a learned secret has: a shorter value (a test's token `t`) would
    /// mask every occurrence of a common letter, and hides nothing worth hiding.
    package static let minimumLearnedLength = 4

    /// The longest piece of a learned value found as one secret, in UTF-8 bytes: a longer value
    /// (a token of 100 KB) is learned as pieces of this size, each masked wherever it appears.
    /// It bounds the work of a match (the pieces' forms are at most 12 times longer).
    package static let learnedPieceLength = 1_024

    /// The most secrets a redactor keeps learned (a long value's pieces count one each):
    /// beyond, the oldest quarter is forgotten. Each is found in about a dozen forms, which
    /// every masked text is searched for; a run that refreshed its token a hundred times masks
    /// the last ones.
    package static let maximumLearnedSecrets = 256

    /// Makes `secret` (and its forms) a secret from now on: a token, a filter's output of a
    /// secret. Text of fewer than ``minimumLearnedLength`` characters is ignored; a value
    /// longer than ``learnedPieceLength`` is learned in pieces; beyond
    /// ``maximumLearnedSecrets``, the oldest are forgotten.
    package func learn(_ secret: String) {
        guard secret.utf8.count >= Self.minimumLearnedLength, secret.count >= Self.minimumLearnedLength else {
            return
        }
        var pieces: [Substring] = []
        var rest = Substring(secret)
        while !rest.isEmpty {
            let utf8 = rest.utf8
            var end =
                utf8.index(utf8.startIndex, offsetBy: Self.learnedPieceLength, limitedBy: utf8.endIndex)
                ?? utf8.endIndex
            while end < utf8.endIndex, UTF8.isContinuation(utf8[end]) { end = utf8.index(before: end) }
            // A tail of a few characters would mask common letters.
            if utf8.distance(from: utf8.startIndex, to: end) >= Self.minimumLearnedLength {
                pieces.append(rest[..<end])
            }
            rest = rest[end...]
        }
        matcher.withLock { matcher in
            for piece in pieces { matcher.learn(String(piece), keepingAtMost: Self.maximumLearnedSecrets) }
        }
    }

    /// Whether `text` holds a secret, in any of its forms.
    package func containsSecret(in text: String) -> Bool {
        let matcher = self.matcher.withLock { $0 }
        guard !matcher.isEmpty else { return false }
        var text = text
        return text.withUTF8 { !matcher.ranges(in: $0).isEmpty }
    }

    /// `text` with every secret replaced by ``mask``.
    package func redact(_ text: String) -> String {
        let matcher = self.matcher.withLock { $0 }
        guard !matcher.isEmpty, !text.isEmpty else { return text }
        var text = text
        return text.withUTF8 { buffer in
            let ranges = matcher.ranges(in: buffer)
            guard !ranges.isEmpty else { return nil }
            return Self.masked(buffer, ranges: ranges, upTo: buffer.count)
        } ?? text
    }

    /// How ``redactedPrefix(of:limit:in:)`` measures its limit.
    package enum Length: Sendable {
        /// Characters, as a message counts them (``MessageValue/limit``).
        case characters
        /// UTF-8 bytes, as `--verbose` cuts a body (a character is never cut in half).
        case bytes
    }

    /// The start of `text` with its secrets masked: its first `limit` characters (or bytes),
    /// a mask that starts within them whole, and whether anything of `text` was left out.
    ///
    /// The secrets are masked before the cut: a secret that straddles it is masked, never
    /// quoted in part. Only the start of `text` is read (the limit plus the longest match).
    package func redactedPrefix(
        of text: some StringProtocol, limit: Int, in length: Length
    ) -> (text: String, isCut: Bool) {
        let matcher = self.matcher.withLock { $0 }
        let text = Substring(text)
        let utf8 = text.utf8
        // Where the cut is, in bytes, on a character (or scalar) boundary.
        var cut: String.Index
        switch length {
        case .characters:
            cut = text.index(text.startIndex, offsetBy: max(0, limit), limitedBy: text.endIndex) ?? text.endIndex
        case .bytes:
            cut = utf8.index(utf8.startIndex, offsetBy: max(0, limit), limitedBy: utf8.endIndex) ?? utf8.endIndex
            while cut > utf8.startIndex, cut < utf8.endIndex, UTF8.isContinuation(utf8[cut]) {
                cut = utf8.index(before: cut)
            }
        }
        let cutOffset = utf8.distance(from: utf8.startIndex, to: cut)
        // A match that starts before the cut ends at most `longestMatch` bytes after it.
        var end = utf8.index(cut, offsetBy: matcher.longestMatch, limitedBy: utf8.endIndex) ?? utf8.endIndex
        while end > cut, end < utf8.endIndex, UTF8.isContinuation(utf8[end]) { end = utf8.index(before: end) }
        var window = String(decoding: utf8[utf8.startIndex..<end], as: UTF8.self)
        let total = utf8.count
        return window.withUTF8 { buffer in
            let ranges = matcher.isEmpty ? [] : matcher.ranges(in: buffer).filter { $0.lowerBound < cutOffset }
            let shown = max(cutOffset, ranges.last?.upperBound ?? 0)
            return (Self.masked(buffer, ranges: ranges, upTo: cutOffset), shown < total)
        }
    }

    /// `buffer` up to `end`, each of `ranges` (in order, not overlapping) replaced by ``mask``
    /// (whole, even past `end`).
    private static func masked(_ buffer: UnsafeBufferPointer<UInt8>, ranges: [Range<Int>], upTo end: Int) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(end)
        var position = 0
        for range in ranges {
            if range.lowerBound > position { output += buffer[position..<min(range.lowerBound, end)] }
            output += mask.utf8
            position = range.upperBound
        }
        if position < end { output += buffer[position..<end] }
        return String(decoding: output, as: UTF8.self)
    }

    /// `value` with every secret in its strings (not its keys) replaced.
    package func redact(_ value: JSONValue) -> JSONValue {
        guard !isEmpty else { return value }
        switch value {
        case .string(let text): return .string(redact(text))
        case .array(let elements): return .array(elements.map(redact))
        case .object(let members): return .object(members.map { JSONValue.Member($0.key, redact($0.value)) })
        case .null, .bool, .integer, .number: return value
        }
    }

    /// The value of the header `name` as shown: ``mask`` for a ``sensitiveHeaders`` one,
    /// otherwise with its secrets replaced.
    package func redact(header name: HTTPField.Name, value: String) -> String {
        Self.sensitiveHeaders.contains(name) ? Self.mask : redact(value)
    }

    /// `report` with every secret replaced in what it shows: its URL, error, captures,
    /// assertions, redirects and elements.
    package func redact(_ report: StepReport) -> StepReport {
        guard !isEmpty else { return report }
        var report = report
        report.url = redact(report.url)
        report.error = report.error.map(redact)
        report.captures = report.captures.map { JSONValue.Member($0.key, redact($0.value)) }
        report.assertions = report.assertions.map { result in
            var result = result
            result.expected = redact(result.expected)
            result.actual = result.actual.map(redact)
            result.reason = result.reason.map(redact)
            result.failures = result.failures.map(redact)
            return result
        }
        report.redirects = report.redirects.map { HTTPRedirect(status: $0.status, location: redact($0.location)) }
        report.items = report.items?.map(redact)
        report.polls = report.polls.map { poll in
            var poll = poll
            poll.failure = poll.failure.map(redact)
            return poll
        }
        return report
    }
}
