import Foundation

/// A proxy server a transport sends requests through: an HTTP proxy (`CONNECT` tunnels for
/// every request, HTTPS or not) or a SOCKS5 proxy.
///
/// Its description never shows the password: `http://alice:***@proxy.corp:3128`.
public struct HTTPProxy: Sendable, Hashable, CustomStringConvertible {
    /// How the transport talks to the proxy.
    public enum Kind: String, Sendable, Hashable {
        /// An HTTP proxy (`http://`), reached in clear text.
        case http
        /// An HTTP proxy reached over TLS (`https://`).
        case https
        /// A SOCKS5 proxy (`socks5://`, or `socks5h://`, which resolves names itself).
        case socks5
    }

    public var kind: Kind
    public var host: String
    public var port: Int
    /// The user name and password from the proxy's URL (`http://user:password@host:port`), sent
    /// to an HTTP proxy as `Proxy-Authorization: Basic …`. A secret: never printed.
    public var credentials: (user: String, password: String)? {
        get { user.map { ($0, password ?? "") } }
        set {
            user = newValue?.user
            password = newValue?.password
        }
    }
    private var user: String?
    private var password: String?

    public init(kind: Kind, host: String, port: Int, credentials: (user: String, password: String)? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.user = credentials?.user
        self.password = credentials?.password
    }

    /// The proxy a URL names, as curl reads it: no scheme means `http://`; the port defaults to
    /// 1080 for `http://` and SOCKS (curl's default), 443 for `https://`; user and password
    /// are percent-decoded.
    ///
    /// ```swift
    /// let proxy = try HTTPProxy(url: "http://alice:s3cret@proxy.corp:3128")
    /// ```
    ///
    /// - Throws: ``HTTPProxyError`` for a URL that is not a proxy this package can use
    ///   (`socks4://`, a path, no host); the message never includes the password.
    public init(url text: String) throws(HTTPProxyError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: withScheme), let scheme = components.scheme?.lowercased()
        else { throw HTTPProxyError(message: "the proxy \(Self.masked(trimmed)) is not a URL") }
        let kind: Kind
        switch scheme {
        case "http": kind = .http
        case "https": kind = .https
        case "socks5", "socks5h": kind = .socks5
        default:
            throw HTTPProxyError(
                message: "the proxy \(Self.masked(trimmed)) uses \(scheme)://, which is not supported "
                    + "(use http://, https:// or socks5://)")
        }
        guard var host = components.host, !host.isEmpty else {
            throw HTTPProxyError(message: "the proxy \(Self.masked(trimmed)) has no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard components.path.isEmpty || components.path == "/", components.query == nil else {
            throw HTTPProxyError(
                message: "the proxy \(Self.masked(trimmed)) has a path; give only scheme, host and port")
        }
        let port = components.port ?? (kind == .https ? 443 : 1080)
        guard (1...65_535).contains(port) else {
            throw HTTPProxyError(message: "the proxy \(Self.masked(trimmed)) has port \(port), not 1–65535")
        }
        let user = components.percentEncodedUser.map { $0.removingPercentEncoding ?? $0 }
        let password = components.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 }
        self.init(kind: kind, host: host, port: port, credentials: user.map { ($0, password ?? "") })
    }

    public var description: String {
        let login = user.map { "\($0):***@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(kind.rawValue)://\(login)\(shownHost):\(port)"
    }

    public static func == (a: HTTPProxy, b: HTTPProxy) -> Bool {
        a.kind == b.kind && a.host == b.host && a.port == b.port && a.user == b.user && a.password == b.password
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(user)
    }

    /// `text` with the password of a `user:password@` part replaced by `***`.
    static func masked(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let start = text.range(of: "://").map(\.upperBound) ?? text.startIndex
        guard start < at, let colon = text[start..<at].firstIndex(of: ":") else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }
}

/// A proxy setting that cannot be used, in words (never with a password).
public struct HTTPProxyError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Which proxy, if any, each request goes through: the rules curl follows, so that a workflow
/// goes the same way whichever transport sends it.
///
/// - ``environment(_:)`` reads the variables curl reads: `http_proxy` for `http://` URLs (lower
///   case only: in CGI-like programs an `HTTP_PROXY` variable can be set by a request's
///   `Proxy:` header), `https_proxy` or `HTTPS_PROXY` for `https://` URLs, then `ALL_PROXY`
///   or `all_proxy` for both, and `NO_PROXY` or `no_proxy` for the hosts that bypass them.
/// - ``init(proxy:noProxy:)`` is one proxy for every URL, as curl's `--proxy` and
///   `--noproxy`.
///
/// `NO_PROXY` is a comma-separated list: `*` (every host), a domain (`example.com` or
/// `.example.com`: the host itself and every name under it), an IP address, or an IP range
/// (`10.0.0.0/8`, `fd00::/8`). Ports in entries are ignored, as curl does.
///
/// ```swift
/// var settings = HTTPClientSettings()
/// settings.proxy = try .init(proxy: HTTPProxy(url: "http://proxy.corp:3128"), noProxy: ["localhost", ".internal"])
/// ```
public struct HTTPProxySettings: Sendable, Hashable {
    /// The proxy for `http://` URLs.
    public var http: HTTPProxy?
    /// The proxy for `https://` URLs.
    public var https: HTTPProxy?
    /// The hosts that bypass the proxies (`NO_PROXY`'s entries).
    public var noProxy: [String]

    /// No proxy: every request goes straight to its server.
    public static let none = HTTPProxySettings(http: nil, https: nil, noProxy: [])

    public init(http: HTTPProxy?, https: HTTPProxy?, noProxy: [String] = []) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// One proxy for every URL, except the hosts `noProxy` lists.
    public init(proxy: HTTPProxy?, noProxy: [String] = []) {
        self.init(http: proxy, https: proxy, noProxy: noProxy)
    }

    /// The proxies the environment names, read as curl reads them (see the type's summary).
    ///
    /// - Throws: ``HTTPProxyError`` naming the variable whose value cannot be used.
    public static func environment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(HTTPProxyError) -> HTTPProxySettings {
        func proxy(_ names: [String]) throws(HTTPProxyError) -> HTTPProxy? {
            for name in names {
                guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                    continue
                }
                do {
                    return try HTTPProxy(url: value)
                } catch {
                    throw HTTPProxyError(message: "\(name): \(error.message)")
                }
            }
            return nil
        }
        let all = try proxy(["ALL_PROXY", "all_proxy"])
        let noProxy = (environment["NO_PROXY"] ?? environment["no_proxy"] ?? "")
        return HTTPProxySettings(
            http: try proxy(["http_proxy"]) ?? all,
            https: try proxy(["https_proxy", "HTTPS_PROXY"]) ?? all,
            noProxy: noProxy.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
        )
    }

    /// The proxy a request to `scheme://host` goes through, or `nil` to go straight there.
    ///
    /// - Parameters:
    ///   - scheme: `http` or `https` (any case).
    ///   - host: The host, without port; an IPv6 address with or without brackets.
    public func proxy(scheme: String, host: String) -> HTTPProxy? {
        let chosen: HTTPProxy? =
            switch scheme.lowercased() {
            case "http": http
            case "https": https
            default: nil
            }
        guard let chosen, !bypasses(host) else { return nil }
        return chosen
    }

    /// Whether `host` is one that `noProxy` lists.
    public func bypasses(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        let address = IPAddressBytes(name)
        for raw in noProxy {
            var entry = raw.lowercased()
            if entry == "*" { return true }
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                entry = String(entry[entry.index(after: entry.startIndex)..<close])
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
                entry = String(entry[..<colon])  // host:port: the port is ignored
            }
            if let slash = entry.firstIndex(of: "/") {
                guard let address, let network = IPAddressBytes(String(entry[..<slash])),
                    let bits = Int(entry[entry.index(after: slash)...])
                else { continue }
                if network.contains(address, prefix: bits) { return true }
                continue
            }
            if let address, let other = IPAddressBytes(entry) {
                if address == other { return true }
                continue
            }
            while entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasSuffix(".") { entry.removeLast() }
            guard !entry.isEmpty else { continue }
            if name == entry || name.hasSuffix("." + entry) { return true }
        }
        return false
    }
}

/// The bytes of an IPv4 or IPv6 address written as text, for `NO_PROXY`'s ranges.
struct IPAddressBytes: Equatable {
    let bytes: [UInt8]

    init?(_ text: String) {
        if let v4 = Self.ipv4(text) {
            bytes = v4
        } else if text.contains(":"), let v6 = Self.ipv6(text) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// Whether `address` is in the network of these bytes with a `prefix`-bit mask.
    func contains(_ address: IPAddressBytes, prefix: Int) -> Bool {
        guard address.bytes.count == bytes.count, (0...(bytes.count * 8)).contains(prefix) else { return false }
        for bit in 0..<prefix {
            let byte = bit / 8
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if bytes[byte] & mask != address.bytes[byte] & mask { return false }
        }
        return true
    }

    private static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var result: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            result.append(value)
        }
        return result
    }

    private static func ipv6(_ text: String) -> [UInt8]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
            all += Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}
