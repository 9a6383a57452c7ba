import Foundation
import Orchestra

/// The cookies of a run, as a browser keeps them (RFC 6265): stored from `Set-Cookie`
/// responses, sent on later requests whose host, path and scheme match, until they expire.
///
/// ```swift
/// let jar = CookieJar()
/// jar.store(setCookie: ["sid=abc; Path=/; HttpOnly"], scheme: "http", host: "127.0.0.1", path: "/login")
/// jar.header(scheme: "http", host: "127.0.0.1", path: "/me")    // "sid=abc"
/// ```
///
/// Safe to share between the steps and `for_each` elements that run at once. A `Domain`
/// attribute is honoured when the host is within it (the public-suffix list is not consulted:
/// a server could set a cookie for a whole top-level domain, which only its own requests
/// would then send). Reads and writes the Netscape cookie file format that curl and Hurl use.
package final class CookieJar: Sendable {
    /// One cookie.
    package struct Cookie: Sendable, Hashable {
        package var name: String
        package var value: String
        /// Lowercased, without a leading dot.
        package var domain: String
        /// Sent to ``domain`` only, not its subdomains (no `Domain` attribute was given).
        package var hostOnly: Bool
        package var path: String
        /// `nil` for a session cookie (kept for the run).
        package var expires: Date?
        package var secure: Bool
        package var httpOnly: Bool

        package init(
            name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/",
            expires: Date? = nil, secure: Bool = false, httpOnly: Bool = false
        ) {
            self.name = name
            self.value = value
            self.domain = domain
            self.hostOnly = hostOnly
            self.path = path
            self.expires = expires
            self.secure = secure
            self.httpOnly = httpOnly
        }
    }

    private struct Stored {
        var cookie: Cookie
        /// Order of creation: among cookies of equal paths, the older is sent first.
        var created: Int
    }

    private struct State {
        var cookies: [Stored] = []
        var created = 0
    }

    private let state = Locked(State())
    private let now: @Sendable () -> Date

    /// - Parameter now: The time expiry is measured against.
    package init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    /// The cookies that have not expired, oldest first.
    package var cookies: [Cookie] {
        let now = now()
        return state.withLock { $0.cookies.map(\.cookie).filter { !Self.isExpired($0, at: now) } }
    }

    /// Adds `cookie`, replacing one of the same name, domain and path.
    package func add(_ cookie: Cookie) {
        let now = now()
        state.withLock { state in
            if let index = state.cookies.firstIndex(where: {
                $0.cookie.name == cookie.name && $0.cookie.domain == cookie.domain && $0.cookie.path == cookie.path
            }) {
                if Self.isExpired(cookie, at: now) {
                    state.cookies.remove(at: index)
                } else {
                    state.cookies[index].cookie = cookie
                }
                return
            }
            guard !Self.isExpired(cookie, at: now) else { return }
            state.created += 1
            state.cookies.append(Stored(cookie: cookie, created: state.created))
        }
    }

    /// Stores the cookies of a response's `Set-Cookie` fields, for the request to `host` and
    /// `path` (its query is ignored). Fields that cannot be read, or whose `Domain` does not
    /// cover `host`, are ignored, as browsers ignore them. A field that holds several cookies
    /// joined with commas (Foundation's `URLSession` on Linux joins repeated `Set-Cookie`
    /// lines) is split first.
    package func store(setCookie fields: [String], scheme: String, host: String, path: String) {
        let now = now()
        let host = Self.normalized(host: host)
        for field in fields.flatMap(Self.splitJoined) {
            if let cookie = Self.parse(setCookie: field, host: host, path: Self.pathOnly(path), now: now) {
                add(cookie)
            }
        }
    }

    /// The `Cookie` header for a request: every cookie whose domain, path and `Secure` match,
    /// longest path first; `nil` when none does.
    package func header(scheme: String, host: String, path: String) -> String? {
        let now = now()
        let host = Self.normalized(host: host)
        let path = Self.pathOnly(path)
        let secure = scheme.lowercased() == "https"
        let matching = state.withLock { state in
            state.cookies.filter { stored in
                let cookie = stored.cookie
                return !Self.isExpired(cookie, at: now) && (secure || !cookie.secure)
                    && Self.domainMatches(host: host, cookie: cookie) && Self.pathMatches(path, cookiePath: cookie.path)
            }
        }
        guard !matching.isEmpty else { return nil }
        return matching.sorted {
            $0.cookie.path.count != $1.cookie.path.count
                ? $0.cookie.path.count > $1.cookie.path.count : $0.created < $1.created
        }.map { "\($0.cookie.name)=\($0.cookie.value)" }.joined(separator: "; ")
    }

    /// The value of the most recently set unexpired cookie named `name` (`{{cookies.NAME}}`).
    package func value(named name: String) -> String? {
        cookies.last { $0.name == name }?.value
    }

    // MARK: - Netscape format

    /// The jar in the Netscape cookie file format (as curl's `-c` writes it): a line per
    /// cookie, `DOMAIN  SUBDOMAINS  PATH  SECURE  EXPIRES  NAME  VALUE`, tab-separated;
    /// `#HttpOnly_` before the domain of an HttpOnly cookie; `0` expires a session cookie.
    package func netscapeText() -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by orchestra run --cookie-jar.\n\n"
        for cookie in cookies {
            let domain = (cookie.httpOnly ? "#HttpOnly_" : "") + (cookie.hostOnly ? "" : ".") + cookie.domain
            let expires = cookie.expires.map { String(Int64($0.timeIntervalSince1970.rounded(.up))) } ?? "0"
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
    /// are skipped).
    ///
    /// - Throws: ``FormatError`` for the first line that is not 7 tab-separated fields with a
    ///   `TRUE`/`FALSE` flag and a whole number of seconds.
    package func load(netscape text: String) throws(FormatError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
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
            let domain = fields[0].lowercased()
            add(
                Cookie(
                    name: fields[5], value: fields[6],
                    domain: domain.hasPrefix(".") ? String(domain.dropFirst()) : domain,
                    hostOnly: !(flags[0] == "TRUE" || domain.hasPrefix(".")), path: fields[2].isEmpty ? "/" : fields[2],
                    expires: expires == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expires)),
                    secure: flags[1] == "TRUE", httpOnly: httpOnly))
        }
    }

    // MARK: - RFC 6265

    /// The `Set-Cookie` values in `field`, split at each comma that starts a new `name=`
    /// (never inside an `Expires` date: `Wed, 21 Oct …` has no `=` after its comma).
    static func splitJoined(_ field: String) -> [String] {
        guard field.contains(",") else { return [field] }
        var parts: [String] = []
        var start = field.startIndex
        var index = field.startIndex
        while let comma = field[index...].firstIndex(of: ",") {
            let rest = field[field.index(after: comma)...].drop { $0 == " " || $0 == "\t" }
            let name = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " }
            if !name.isEmpty, rest.dropFirst(name.count).first == "=" {
                parts.append(String(field[start..<comma]))
                start = rest.startIndex
            }
            index = field.index(after: comma)
        }
        parts.append(String(field[start...]))
        return parts
    }

    private static func isExpired(_ cookie: Cookie, at now: Date) -> Bool {
        cookie.expires.map { $0 <= now } ?? false
    }

    /// `Set-Cookie: NAME=VALUE; Attr=…` for a request to `host` and `path` (RFC 6265 §5.2–5.3).
    static func parse(setCookie field: String, host: String, path: String, now: Date) -> Cookie? {
        var parts = field.split(separator: ";", omittingEmptySubsequences: false)
        guard !parts.isEmpty else { return nil }
        let pair = parts.removeFirst()
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(name: name, value: value, domain: host, path: defaultPath(path))
        var maxAge: Date?
        for part in parts {
            let attribute = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = attribute[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = attribute.count > 1 ? attribute[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "expires":
                if let date = parseDate(argument) { cookie.expires = date }
            case "max-age":
                guard let first = argument.first, first == "-" || first.isASCII && first.isNumber,
                    let seconds = Int(argument)
                else { continue }
                maxAge = seconds <= 0 ? .distantPast : now.addingTimeInterval(TimeInterval(seconds))
            case "domain":
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // Only the host itself or a domain it is within; never for an IP address.
                guard host == domain || (!isIPAddress(host) && host.hasSuffix("." + domain)) else { return nil }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                cookie.path = argument.hasPrefix("/") ? argument : defaultPath(path)
            case "secure":
                cookie.secure = true
            case "httponly":
                cookie.httpOnly = true
            default:
                continue
            }
        }
        if let maxAge { cookie.expires = maxAge }
        return cookie
    }

    static func domainMatches(host: String, cookie: Cookie) -> Bool {
        host == cookie.domain || (!cookie.hostOnly && !isIPAddress(host) && host.hasSuffix("." + cookie.domain))
    }

    /// RFC 6265 §5.1.4.
    static func pathMatches(_ path: String, cookiePath: String) -> Bool {
        guard path.hasPrefix(cookiePath) else { return false }
        return path.count == cookiePath.count || cookiePath.hasSuffix("/")
            || path.dropFirst(cookiePath.count).first == "/"
    }

    /// The directory of a request's path (RFC 6265 §5.1.4): `/a/b` → `/a`, `/a` → `/`.
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// `path` without its query or fragment; `/` when empty.
    static func pathOnly(_ path: String) -> String {
        let end = path.firstIndex { $0 == "?" || $0 == "#" } ?? path.endIndex
        let only = String(path[..<end])
        return only.isEmpty ? "/" : only
    }

    /// A host as cookies compare it: lowercased, without a port (an IPv6 address keeps its
    /// brackets).
    static func normalized(host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("[") {
            if let close = host.firstIndex(of: "]") { host = String(host[...close]) }
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        return host
    }

    private static func isIPAddress(_ host: String) -> Bool {
        host.hasPrefix("[") || (!host.isEmpty && host.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") })
    }

    /// A cookie date, read as RFC 6265 §5.1.1 does: the time, day, month and year tokens in
    /// any order and spelling (`Wed, 21 Oct 2015 07:28:00 GMT`, `Wednesday, 21-Oct-15 …`,
    /// `Wed Oct 21 07:28:00 2015`); `nil` if one is missing or out of range.
    static func parseDate(_ text: String) -> Date? {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        let delimiters = CharacterSet(charactersIn: "\t !\"#$%&'()*+,-./;<=>?@[\\]^_`{|}~")
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in text.components(separatedBy: delimiters) where !token.isEmpty {
            let digits = token.prefix { $0.isASCII && $0.isNumber }
            if time == nil {
                let parts = token.split(separator: ":", omittingEmptySubsequences: false)
                if parts.count == 3,
                    let h = Int(parts[0].prefix(2)), let m = Int(parts[1].prefix(2)),
                    let s = Int(parts[2].prefix { $0.isASCII && $0.isNumber }.prefix(2))
                {
                    time = (h, m, s)
                    continue
                }
            }
            if day == nil, (1...2).contains(digits.count), let value = Int(digits) {
                day = value
                continue
            }
            if month == nil, let index = months.firstIndex(of: String(token.prefix(3)).lowercased()) {
                month = index + 1
                continue
            }
            if year == nil, (2...4).contains(digits.count), let value = Int(digits) {
                year = value
                continue
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1_900 } else if (0...69).contains(year) { year += 2_000 }
        guard (1...31).contains(day), year >= 1_601, time.0 <= 23, time.1 <= 59, time.2 <= 59 else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        return calendar.date(
            from: DateComponents(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2))
    }
}
