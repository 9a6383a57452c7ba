import Foundation
import HTTPTypes
import Orchestra

/// Whether an ``HTTPCoordinator`` follows redirects, and how many in a row.
///
/// The coordinator follows them itself (transports return a 3xx as is), so each hop waits for
/// a slot of its own host, is timed and retried like any request, and is reported in
/// ``HTTPResult/redirects``. The rules are those of RFC 9110 §15.4 as browsers apply them:
/// - **307, 308:** the same method and body are sent to the new location.
/// - **303:** any method but GET and HEAD becomes a GET without a body.
/// - **301, 302:** a POST becomes a GET without a body; other methods are kept.
/// - A hop to another origin (scheme, host or port) drops every credential the request
///   carries, so none leaks to another server: `Authorization`, `Proxy-Authorization`,
///   `Cookie`, the field the configuration's ``HTTPCoordinator/Authentication`` signs with
///   (whatever its name, `X-Api-Token` say), and the request's
///   ``HTTPRequestOptions/credentialFields``. The hop is not signed again, and a refusal
///   from the other origin (a 401) does not refresh the token: it is returned as it is.
/// - A 3xx without a `Location` (a 304, say) is a response like any other.
public struct HTTPRedirectPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The most redirects followed for one request; 0 follows none (the 3xx is returned).
    public var maxHops: Int

    /// Follows at most `maxHops` redirects (10 by default, as browsers allow about 20 and curl
    /// 50); one more fails the request with ``HTTPRedirectError/Code/tooManyRedirects``.
    public static func follow(maxHops: Int = 10) -> HTTPRedirectPolicy {
        HTTPRedirectPolicy(maxHops: maxHops)
    }

    /// Follows no redirect: a 3xx is returned like any other response.
    public static let never = HTTPRedirectPolicy(maxHops: 0)

    /// Follows at most `maxHops` redirects in a row (0: none). Traps if `maxHops` is negative.
    public init(maxHops: Int) {
        checkArgument(maxHops >= 0, "HTTPRedirectPolicy(maxHops:): must not be negative, got \(maxHops)")
        self.maxHops = maxHops
    }

    /// `follow up to N redirects`, or `no redirects`.
    public var description: String { maxHops == 0 ? "no redirects" : "follow up to \(maxHops) redirects" }
}

/// One redirect a request followed: the status that redirected it and the absolute URL it went
/// to.
public struct HTTPRedirect: Sendable, Hashable, CustomStringConvertible {
    /// The 3xx status that redirected the request.
    public var status: Int
    /// The `Location`, resolved against the URL that answered.
    public var location: String

    /// A redirect by `status` to the absolute URL `location`.
    public init(status: Int, location: String) {
        self.status = status
        self.location = location
    }

    /// `302 → https://…`.
    public var description: String { "\(status) → \(location)" }
}

/// A redirect that could not be followed.
public struct HTTPRedirectError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable { case tooManyRedirects, invalidLocation }
        private let value: Value

        /// More redirects in a row than ``HTTPRedirectPolicy/maxHops``.
        public static let tooManyRedirects = Code(value: .tooManyRedirects)
        /// A `Location` that is not an http or https URL.
        public static let invalidLocation = Code(value: .invalidLocation)

        /// The code's name.
        public var description: String {
            switch value {
            case .tooManyRedirects: "tooManyRedirects"
            case .invalidLocation: "invalidLocation"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// The redirects followed before this one failed, in order.
    public var hops: [HTTPRedirect]
    /// What happened, naming the URL and the limit.
    public var message: String

    /// The message.
    public var description: String { message }
}

extension HTTPResult {
    /// Whether one of the redirects this result followed led away from `request`'s origin:
    /// from there on the request carried none of its credentials (a 401 then says nothing of
    /// its token).
    package func leftOrigin(of request: HTTPRequest) -> Bool {
        RedirectRule.leftOrigin(of: request, through: redirects)
    }
}

/// The request a redirect leads to: the rules of ``HTTPRedirectPolicy``, as a pure function.
enum RedirectRule {
    static let followed: Set<Int> = [301, 302, 303, 307, 308]
    private static let credentials: [HTTPField.Name] = [.authorization, .proxyAuthorization, .cookie]
    private static let contentFields: [HTTPField.Name] = [
        .contentType, .contentLength, .contentEncoding, .contentLanguage, .contentLocation,
    ]

    /// The request to send after `response` redirected `request`, with its body and the absolute
    /// location; `nil` if `response` is not a redirect to follow. On a hop to another origin,
    /// `Authorization`, `Proxy-Authorization`, `Cookie` and the fields named in `credentials`
    /// are dropped.
    ///
    /// - Throws: ``HTTPRedirectError`` with ``HTTPRedirectError/Code/invalidLocation`` when the
    ///   `Location` is not an http or https URL (`hops` is left empty for the caller to fill).
    static func next<Body>(
        after request: HTTPRequest, body: Body?, response: HTTPResponse, credentials: Set<HTTPField.Name> = []
    ) throws(HTTPRedirectError) -> (request: HTTPRequest, body: Body?, location: String)? {
        let status = response.status.code
        guard followed.contains(status), let location = response.headerFields[.location] else { return nil }
        let origin = "\(request.scheme ?? "http")://\(request.authority ?? "")"
        guard let base = URL(string: origin + (request.path ?? "/")),
            let target = URL(string: location, relativeTo: base)?.absoluteURL,
            let components = URLComponents(url: target, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.percentEncodedHost, !host.isEmpty
        else {
            throw HTTPRedirectError(
                code: .invalidLocation, hops: [],
                message: "a \(status) redirect to '\(location)', which is not an http or https URL"
            )
        }
        let authority = components.port.map { "\(host):\($0)" } ?? host
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        var next = HTTPRequest(method: request.method, scheme: scheme, authority: authority, path: path)
        next.headerFields = request.headerFields
        var nextBody = body
        let becomesGet =
            switch status {
            case 303: request.method != .get && request.method != .head
            case 301, 302: request.method == .post
            default: false
            }
        if becomesGet {
            next.method = .get
            nextBody = nil
            for name in contentFields { next.headerFields[name] = nil }
        }
        if !isSameOrigin(scheme: scheme, authority: authority, as: request) {
            for name in Self.credentials { next.headerFields[name] = nil }
            for name in credentials { next.headerFields[name] = nil }
        }
        return (next, nextBody, target.absoluteString)
    }

    /// Whether `scheme://authority` is `request`'s origin (in any case).
    private static func isSameOrigin(scheme: String, authority: String, as request: HTTPRequest) -> Bool {
        scheme.lowercased() == request.scheme?.lowercased() && authority.lowercased() == request.authority?.lowercased()
    }

    /// Whether one of `hops` (absolute locations) led away from `request`'s origin: its
    /// credentials were dropped there, for the rest of the chain.
    static func leftOrigin(of request: HTTPRequest, through hops: [HTTPRedirect]) -> Bool {
        hops.contains { hop in
            guard let components = URLComponents(string: hop.location), let scheme = components.scheme,
                let host = components.percentEncodedHost
            else { return true }
            let authority = components.port.map { "\(host):\($0)" } ?? host
            return !isSameOrigin(scheme: scheme, authority: authority, as: request)
        }
    }
}
