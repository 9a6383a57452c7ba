import Foundation

// MARK: - RFC 6265: reading Set-Cookie, matching hosts and paths, dates

extension CookieJar {
    /// The `Set-Cookie` values in `field`, split at each comma that starts a new `name=`
    /// (never inside an `Expires` date: `Wed, 21 Oct …` has no `=` after its comma); at most
    /// `limit`, the rest of the field left out.
    static func splitJoined(_ field: String, limit: Int = .max) -> [String] {
        guard limit > 0 else { return [] }
        guard field.contains(",") else { return [field] }
        var parts: [String] = []
        var start = field.startIndex
        var index = field.startIndex
        while let comma = field[index...].firstIndex(of: ",") {
            let rest = field[field.index(after: comma)...].drop { $0 == " " || $0 == "\t" }
            let name = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " }
            if !name.isEmpty, rest.dropFirst(name.count).first == "=" {
                parts.append(String(field[start..<comma]))
                if parts.count == limit { return parts }
                start = rest.startIndex
            }
            index = field.index(after: comma)
        }
        parts.append(String(field[start...]))
        return parts
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
        if let expires = cookie.expires { cookie.expires = min(expires, now.addingTimeInterval(maximumLifetime)) }
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
