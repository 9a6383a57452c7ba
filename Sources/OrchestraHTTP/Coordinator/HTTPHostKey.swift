/// The host a request goes to, as host limits name it: the one rule behind
/// ``HTTPCoordinator/Configuration/hostLimits``, the workflow's `hosts:` entries and the durable
/// resources a run's requests use.
///
/// A key is a host and, for a request, its port: the port written in the authority, else the
/// scheme's default (80 for `http`, 443 for `https`). A host limit's pattern names a host on
/// every port (`example.com`) or one port of it (`example.com:8443`). The host is compared as
/// DNS and browsers do: in any case (`API.Example.com` is `api.example.com`), a trailing dot
/// ignored (`example.com.` is `example.com`), an IPv6 address in brackets (`[::1]:8080`), and
/// any userinfo (`user:pass@`) left out.
///
/// ```swift
/// let limits = HTTPHostKey.limits(["Example.com": 4, "example.com:8443": 1])
/// HTTPHostKey(scheme: "https", authority: "EXAMPLE.com").entry(in: limits)?.key.description  // "example.com"
/// HTTPHostKey(scheme: "https", authority: "example.com:8443").entry(in: limits)?.value      // 1
/// HTTPHostKey(scheme: "https", authority: "example.com:443").description                   // "example.com:443"
/// ```
///
/// *Why one function:* the coordinator in one process and the durable run's resources in a
/// store must agree on which limit a request counts against; two readings of `HOST:443` and
/// `host` gave a request two limits, or none.
package struct HTTPHostKey: Hashable, Sendable, CustomStringConvertible {
    /// The host: lowercased, without a trailing dot; an IPv6 address in its brackets.
    package let host: String
    /// The port; `nil` in a pattern that names every port of the host (and for a request to
    /// a scheme with no default port that gives none).
    package let port: Int?

    /// The key of a request to `scheme://authority`; `authority` as in a URL (`host`,
    /// `host:port`, `[v6]:port`, with or without `user:pass@`).
    package init(scheme: String?, authority: String) {
        var rest = Substring(authority)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        let (host, portText) = Self.split(rest)
        self.host = Self.normalized(host)
        if let portText, let port = Int(portText), (0...65_535).contains(port) {
            self.port = port
        } else if portText == nil || portText?.isEmpty == true {
            // No port, or an empty one (`host:`, which RFC 3986 reads as the default).
            self.port = Self.defaultPort(of: scheme)
        } else {
            self.port = nil
        }
    }

    /// The key a host limit's pattern names: `host` (every port) or `host:port` (that port),
    /// a bracketed IPv6 address as the host; `nil` if `pattern` is neither (a scheme, a path,
    /// userinfo, whitespace, a port outside 1...65535, an empty host).
    package init?(pattern: String) {
        guard !pattern.isEmpty,
            !pattern.contains(where: { $0 == "/" || $0 == "@" || $0 == "?" || $0 == "#" || $0.isWhitespace })
        else { return nil }
        let (host, portText) = Self.split(Substring(pattern))
        guard !host.isEmpty, host != "[]" else { return nil }
        // Unbracketed, a host holds no colon (an IPv6 address needs its brackets).
        guard host.hasPrefix("[") ? host.hasSuffix("]") : !host.contains(":") else { return nil }
        let name = Self.normalized(host)
        guard !name.isEmpty else { return nil }
        if let portText {
            guard let port = Int(portText), (1...65_535).contains(port) else { return nil }
            self.init(host: name, port: port)
        } else {
            self.init(host: name, port: nil)
        }
    }

    private init(host: String, port: Int?) {
        self.host = host
        self.port = port
    }

    /// The same host on every port: the key of the pattern naming the host alone.
    package var anyPort: HTTPHostKey { HTTPHostKey(host: host, port: nil) }

    /// `host:port`, or `host` for every port: the key as a pattern writes it.
    package var description: String { port.map { "\(host):\($0)" } ?? host }

    /// The limit that applies to a request with this key: the entry naming its `host:port` if
    /// there is one, else the one naming its host; `nil` if none names it.
    ///
    /// Complexity: two hash lookups.
    package func entry<Value>(in limits: [HTTPHostKey: Value]) -> (key: HTTPHostKey, value: Value)? {
        if let value = limits[self] { return (self, value) }
        let any = anyPort
        return limits[any].map { (any, $0) }
    }

    /// `patterns` keyed by what they name; two patterns naming one key (`Example.com` and
    /// `example.com.`) keep the lower limit. A pattern that is not a host is left out (check
    /// them first with ``init(pattern:)``).
    package static func limits(_ patterns: some Sequence<(String, Int)>) -> [HTTPHostKey: Int] {
        var limits: [HTTPHostKey: Int] = [:]
        for (pattern, limit) in patterns {
            guard let key = HTTPHostKey(pattern: pattern) else { continue }
            limits[key] = min(limits[key] ?? limit, limit)
        }
        return limits
    }

    /// The port a scheme implies when the authority gives none.
    package static func defaultPort(of scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    /// The host (brackets kept) and the text after its `:`, if any.
    private static func split(_ authority: Substring) -> (host: Substring, port: Substring?) {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let rest = authority[authority.index(after: close)...]
            let host = authority[...close]
            guard rest.first == ":" else { return (host, rest.isEmpty ? nil : rest) }
            return (host, rest.dropFirst())
        }
        guard let colon = authority.firstIndex(of: ":") else { return (authority, nil) }
        return (authority[..<colon], authority[authority.index(after: colon)...])
    }

    /// `host` lowercased, a trailing dot of a name dropped.
    private static func normalized(_ host: Substring) -> String {
        var name = host.lowercased()
        if !name.hasPrefix("["), name.hasSuffix(".") { name.removeLast() }
        return name
    }
}
