/// A value from a file, the command line or a server, as a message quotes it: whole when it is
/// short, otherwise its first ``limit`` characters, an ellipsis and its length:
/// `aaaa… (50000000 characters)`.
///
/// A message quotes the value it is about so that the reader can find it, but a value may be
/// any size (a 50 MB id, a URL a server sent back). Quoted whole, it would bury the reason and
/// flood the terminal. Every message that quotes a value goes through
/// ``shortened(_:limit:)``, usually as `"\(short: value)"`.
package enum MessageValue {
    /// How many characters of a value a message keeps.
    package static let limit = 200

    /// `text` if it has at most `limit` characters; otherwise its first `limit` characters,
    /// `…` and how many characters it has.
    ///
    /// Within a run (``Redactor/current`` is set), the secrets are masked first, then the text
    /// is cut: a secret that straddles the cut is masked whole, never quoted in part.
    ///
    /// ```swift
    /// MessageValue.shortened(String(repeating: "a", count: 1_000), limit: 3)   // "aaa… (1000 characters)"
    /// ```
    ///
    /// Complexity: O(`limit`) for short text; linear in the length of `text` otherwise (its
    /// characters are counted).
    package static func shortened(_ text: some StringProtocol, limit: Int = limit) -> String {
        if let redactor = Redactor.current, !redactor.isEmpty {
            let (start, isCut) = redactor.redactedPrefix(of: text, limit: limit, in: .characters)
            return isCut ? start + "… (\(text.count) characters)" : start
        }
        // Fewer bytes than the limit: fewer characters too.
        if text.utf8.count <= limit { return String(text) }
        let start = text.prefix(limit)
        guard start.endIndex < text.endIndex else { return String(text) }
        return String(start) + "… (\(text.count) characters)"
    }
}

extension MessageValue {
    /// ``shortened(_:limit:)`` of `start`, the first part of a longer text whose length is
    /// not known: `aaaa… (more than 65536 characters)`. Secrets are masked as there (`start`
    /// goes far enough past `limit` for one that straddles the cut).
    package static func shortened(start: some StringProtocol, limit: Int = limit) -> String {
        let quoted: String
        if let redactor = Redactor.current, !redactor.isEmpty {
            quoted = redactor.redactedPrefix(of: start, limit: limit, in: .characters).text
        } else {
            quoted = String(start.prefix(limit))
        }
        return quoted + "… (more than \(start.count) characters)"
    }
}

extension DefaultStringInterpolation {
    /// `"got '\(short: value)'"`: the value's description through
    /// ``MessageValue/shortened(_:limit:)``.
    package mutating func appendInterpolation(short value: some CustomStringConvertible) {
        appendLiteral(MessageValue.shortened(value.description))
    }
}
