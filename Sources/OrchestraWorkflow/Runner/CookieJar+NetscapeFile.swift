import Foundation

// MARK: - The Netscape cookie file

extension CookieJar {
    /// The jar in the Netscape cookie file format (as curl's `-c` writes it): a line per
    /// cookie, `DOMAIN  SUBDOMAINS  PATH  SECURE  EXPIRES  NAME  VALUE`, tab-separated;
    /// `#HttpOnly_` before the domain of an HttpOnly cookie; `0` expires a session cookie.
    package func netscapeText() -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by orchestra run --cookie-jar.\n\n"
        for cookie in cookies {
            let domain = (cookie.httpOnly ? "#HttpOnly_" : "") + (cookie.hostOnly ? "" : ".") + cookie.domain
            // Clamped: a loaded file's expiry may be any Int64, which a Double cannot hold exactly.
            let expires =
                cookie.expires.map {
                    String(Int64(min(max($0.timeIntervalSince1970.rounded(.up), 1), 253_402_300_799)))
                }
                ?? "0"
            let fields = [
                domain, cookie.hostOnly ? "FALSE" : "TRUE", cookie.path, cookie.secure ? "TRUE" : "FALSE", expires,
                cookie.name, cookie.value,
            ]
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }

    /// A line of a Netscape cookie file that cannot be read.
    package struct FormatError: Error, Sendable, CustomStringConvertible {
        /// 1-based.
        package var line: Int
        package var message: String
        package var description: String { "line \(line): \(message)" }
    }

    /// Adds the cookies of a Netscape cookie file (comments, blank lines and expired cookies
    /// are skipped), under the limits a server's cookies have: a domain keeps its last
    /// ``maximumCookiesPerDomain``.
    ///
    /// - Throws: ``FormatError`` for the first line that is not 7 tab-separated fields with a
    ///   `TRUE`/`FALSE` flag and a whole number of seconds, or holds a cookie that
    ///   ``problem(with:)`` refuses (a control character, more than ``maximumCookieBytes``), or
    ///   is the cookie after the first ``maximumCookies``.
    ///
    /// Complexity: linear in the length of `text` (a line at a time, never a list of them)
    /// and in the jar's size per cookie.
    package func load(netscape text: String) throws(FormatError) {
        var count = 0
        for (index, rawLine) in Lines(text: text).enumerated() {
            var line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                httpOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 7 else {
                throw FormatError(
                    line: index + 1,
                    message:
                        "expected 7 tab-separated fields (domain, subdomains, path, secure, expires, name, value), got \(fields.count)"
                )
            }
            let flags = [fields[1], fields[3]].map { $0.uppercased() }
            guard flags.allSatisfy({ $0 == "TRUE" || $0 == "FALSE" }) else {
                throw FormatError(line: index + 1, message: "the 2nd and 4th fields must be TRUE or FALSE")
            }
            guard let expires = Int64(fields[4]), expires >= 0 else {
                throw FormatError(
                    line: index + 1, message: "the expiry '\(short: fields[4])' is not a whole number of seconds ≥ 0")
            }
            count += 1
            guard count <= Self.maximumCookies else {
                throw FormatError(
                    line: index + 1, message: "more than \(Self.maximumCookies) cookies, the most a jar keeps")
            }
            let domain = fields[0].lowercased()
            let cookie = Cookie(
                name: fields[5], value: fields[6],
                domain: domain.hasPrefix(".") ? String(domain.dropFirst()) : domain,
                hostOnly: !(flags[0] == "TRUE" || domain.hasPrefix(".")), path: fields[2].isEmpty ? "/" : fields[2],
                expires: expires == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expires)),
                secure: flags[1] == "TRUE", httpOnly: httpOnly)
            if let problem = Self.problem(with: cookie) {
                throw FormatError(line: index + 1, message: problem)
            }
            add(cookie)
        }
    }

    /// The lines of a text, split at each `\n` (also the one of a `\r\n`, which is a single
    /// `Character`), one at a time.
    private struct Lines: Sequence, IteratorProtocol {
        let text: String
        var start: String.Index?

        init(text: String) {
            self.text = text
            start = text.startIndex
        }

        mutating func next() -> Substring? {
            guard let start else { return nil }
            let utf8 = text.utf8
            let end = utf8[start...].firstIndex(of: UInt8(ascii: "\n")) ?? utf8.endIndex
            self.start = end == utf8.endIndex ? nil : utf8.index(after: end)
            return text[start..<end]
        }
    }
}
