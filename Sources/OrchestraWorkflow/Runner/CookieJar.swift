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
///
/// What a server sends is bounded as browsers and curl bound it (RFC 6265 §6.1): a cookie of
/// more than ``maximumCookieBytes`` is ignored, so is one with a control character; a domain
/// keeps at most ``maximumCookiesPerDomain`` cookies and the jar ``maximumCookies``, the least
/// recently used going first; a response sets at most ``maximumCookiesPerResponse``; and a
/// `Cookie` header holds at most ``maximumHeaderBytes``.
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

        /// Its size as the limit ``CookieJar/maximumCookieBytes`` counts it: the UTF-8 bytes
        /// of its name, value, domain and path.
        package var byteCount: Int {
            name.utf8.count + value.utf8.count + domain.utf8.count + path.utf8.count
        }
    }

    // MARK: - Limits

    /// The largest cookie kept, in bytes: its `Set-Cookie` text (name, value and attributes),
    /// and its name, value, domain and path as stored (``Cookie/byteCount``). A larger one is
    /// ignored, as browsers ignore it (RFC 6265 §6.1 asks for at least 4,096).
    package static let maximumCookieBytes = 4_096
    /// The most cookies a domain keeps (RFC 6265 §6.1's 50): a new one evicts the domain's
    /// least recently used (set or sent).
    package static let maximumCookiesPerDomain = 50
    /// The most cookies the jar keeps (RFC 6265 §6.1's 3,000): a new one evicts the least
    /// recently used (set or sent) of all.
    package static let maximumCookies = 3_000
    /// The longest a cookie lives: a later `Expires` or a longer `Max-Age` is cut to 400 days
    /// from when it was set, as browsers cut it (RFC 6265bis §5.6.1), which also keeps a huge
    /// `Max-Age` out of date arithmetic.
    package static let maximumLifetime: TimeInterval = 400 * 24 * 3600
    /// The most cookies one response sets (curl's limit): the `Set-Cookie` fields after the
    /// 50th cookie are ignored.
    package static let maximumCookiesPerResponse = 50
    /// The longest `Cookie` header sent, in bytes (curl's limit, and Apache's for a header
    /// field): the cookies that would make it longer are left out of that request.
    package static let maximumHeaderBytes = 8_190

    private struct Stored {
        var cookie: Cookie
        /// Order of creation: among cookies of equal paths, the older is sent first.
        var created: Int
        /// When it was last set or sent (the jar's tick): the least recent goes first.
        var used: Int
    }

    private struct State {
        var cookies: [Stored] = []
        var created = 0
        var tick = 0

        /// Adds `cookie` (replacing one of the same name, domain and path, or evicting the
        /// least recently used of its domain or of the jar when one is full). Linear in the
        /// jar's size, which ``CookieJar/maximumCookies`` bounds.
        mutating func add(_ cookie: Cookie, now: Date) {
            tick += 1
            let expired = CookieJar.isExpired(cookie, at: now)
            if let index = cookies.firstIndex(where: {
                $0.cookie.name == cookie.name && $0.cookie.domain == cookie.domain && $0.cookie.path == cookie.path
            }) {
                if expired {
                    cookies.remove(at: index)
                } else {
                    cookies[index].cookie = cookie
                    cookies[index].used = tick
                }
                return
            }
            guard !expired else { return }
            var sameDomain = cookies.count { $0.cookie.domain == cookie.domain }
            if sameDomain >= CookieJar.maximumCookiesPerDomain || cookies.count >= CookieJar.maximumCookies {
                cookies.removeAll { CookieJar.isExpired($0.cookie, at: now) }
                sameDomain = cookies.count { $0.cookie.domain == cookie.domain }
            }
            if sameDomain >= CookieJar.maximumCookiesPerDomain {
                evictLeastRecentlyUsed { $0.cookie.domain == cookie.domain }
            }
            if cookies.count >= CookieJar.maximumCookies {
                evictLeastRecentlyUsed { _ in true }
            }
            created += 1
            cookies.append(Stored(cookie: cookie, created: created, used: tick))
        }

        private mutating func evictLeastRecentlyUsed(among included: (Stored) -> Bool) {
            var victim: Int?
            for index in cookies.indices where included(cookies[index]) {
                if victim.map({ cookies[index].used < cookies[$0].used }) ?? true { victim = index }
            }
            if let victim { cookies.remove(at: victim) }
        }
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

    /// Adds `cookie`, replacing one of the same name, domain and path; ignores it if
    /// ``problem(with:)`` finds one. When its domain or the jar is full, the least recently
    /// used cookie (of the domain, then of the jar) is dropped to make room.
    package func add(_ cookie: Cookie) {
        guard Self.problem(with: cookie) == nil else { return }
        let now = now()
        state.withLock { $0.add(cookie, now: now) }
    }

    /// Why `cookie` cannot be kept, if it cannot: it is larger than ``maximumCookieBytes``,
    /// or its name, value, domain or path holds a control character (U+0000–U+001F, U+007F:
    /// RFC 6265's cookie octets exclude them, and a tab or a line break would forge fields
    /// of the Netscape file).
    package static func problem(with cookie: Cookie) -> String? {
        let size = cookie.byteCount
        if size > maximumCookieBytes {
            return "the cookie is \(size) bytes, more than \(maximumCookieBytes) (name, value, domain and path)"
        }
        for (field, text) in [
            ("name", cookie.name), ("value", cookie.value), ("domain", cookie.domain), ("path", cookie.path),
        ] where text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "the cookie's \(field) holds a control character"
        }
        return nil
    }

    /// Stores the cookies of a response's `Set-Cookie` fields, for the request to `host` and
    /// `path` (its query is ignored). Fields that cannot be read, whose `Domain` does not
    /// cover `host`, or that ``problem(with:)`` refuses are ignored, as browsers ignore them,
    /// and so is any `Set-Cookie` text longer than ``maximumCookieBytes`` and every cookie after
    /// the first ``maximumCookiesPerResponse``. A field that holds several cookies joined with
    /// commas (Foundation's `URLSession` on Linux joins repeated `Set-Cookie` lines) is split
    /// first.
    package func store(setCookie fields: [String], scheme: String, host: String, path: String) {
        let now = now()
        let host = Self.normalized(host: host)
        let path = Self.pathOnly(path)
        var remaining = Self.maximumCookiesPerResponse
        for field in fields {
            guard remaining > 0 else { break }
            for text in Self.splitJoined(field, limit: remaining) {
                remaining -= 1
                guard text.utf8.count <= Self.maximumCookieBytes,
                    let cookie = Self.parse(setCookie: text, host: host, path: path, now: now)
                else { continue }
                add(cookie)
            }
        }
    }

    /// The `Cookie` header for a request: every cookie whose domain, path and `Secure` match,
    /// longest path first (then oldest first); `nil` when none does. A cookie that would make
    /// the header longer than ``maximumHeaderBytes`` is left out (the next ones are still
    /// tried), as curl leaves it out. The cookies sent count as used (see ``maximumCookies``).
    package func header(scheme: String, host: String, path: String) -> String? {
        // An empty jar (a run whose servers set no cookie) answers before the host and path
        // are normalized: 0.8 % of a 10,000-request run's CPU went there for nothing.
        if state.withLock({ $0.cookies.isEmpty }) { return nil }
        let now = now()
        let host = Self.normalized(host: host)
        let path = Self.pathOnly(path)
        let secure = scheme.lowercased() == "https"
        return state.withLock { state -> String? in
            let matching = state.cookies.indices.filter { index in
                let cookie = state.cookies[index].cookie
                return !Self.isExpired(cookie, at: now) && (secure || !cookie.secure)
                    && Self.domainMatches(host: host, cookie: cookie) && Self.pathMatches(path, cookiePath: cookie.path)
            }
            guard !matching.isEmpty else { return nil }
            let ordered = matching.sorted {
                let (a, b) = (state.cookies[$0], state.cookies[$1])
                let (pathA, pathB) = (a.cookie.path.utf8.count, b.cookie.path.utf8.count)
                return pathA != pathB ? pathA > pathB : a.created < b.created
            }
            state.tick += 1
            var header = ""
            var length = 0
            for index in ordered {
                let cookie = state.cookies[index].cookie
                let added = (length == 0 ? 0 : 2) + cookie.name.utf8.count + 1 + cookie.value.utf8.count
                guard length + added <= Self.maximumHeaderBytes else { continue }
                if length > 0 { header += "; " }
                header += cookie.name + "=" + cookie.value
                length += added
                state.cookies[index].used = state.tick
            }
            return header.isEmpty ? nil : header
        }
    }

    /// The value of the most recently set unexpired cookie named `name` (`{{cookies.NAME}}`).
    package func value(named name: String) -> String? {
        cookies.last { $0.name == name }?.value
    }

    static func isExpired(_ cookie: Cookie, at now: Date) -> Bool {
        cookie.expires.map { $0 <= now } ?? false
    }
}
