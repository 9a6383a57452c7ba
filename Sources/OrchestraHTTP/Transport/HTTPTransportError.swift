/// A transport could not exchange a request with the server: no response came back.
///
/// A response with any status is not an error (a transport returns it); this error means
/// there is no response at all: the connection was refused or lost, the host was not found,
/// the request could not be sent as it is… Each ``HTTPTransport`` maps its client's own
/// errors (`URLError`, AsyncHTTPClient's and SwiftNIO's errors) to it, so that code above the
/// transport sees the same reasons whichever client sends:
///
/// ```swift
/// catch let error as HTTPTransportError where error.code == .connectionRefused {
///     print(error)              // connection refused by 127.0.0.1:8080
///     print(error.isTransient)  // true: worth retrying an idempotent request
/// }
/// ```
///
/// The ``message`` is in words and names the host; the client's error stays in
/// ``underlying`` for diagnosis.
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    /// The reason, comparable with `==`; more codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name: `connectionRefused`.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// Nothing listens on the host's port (or a firewall refused the connection).
        /// Transient.
        public static let connectionRefused = Code("connectionRefused")
        /// The host name could not be resolved. Transient: DNS failures are often temporary.
        public static let hostNotFound = Code("hostNotFound")
        /// Connecting, or waiting for the response, took longer than the client allows.
        /// Transient.
        public static let timedOut = Code("timedOut")
        /// The connection was reset or closed before the whole response arrived. Transient.
        public static let connectionLost = Code("connectionLost")
        /// The device has no network connection (or the network is unreachable). Transient.
        public static let notConnected = Code("notConnected")
        /// The TLS handshake failed: an untrusted or expired certificate, a host name that
        /// does not match, no common protocol version… Not transient: retrying does not fix it.
        public static let tls = Code("tls")
        /// The server's response could not be parsed as HTTP. Transient: often a proxy or a
        /// connection in a bad state.
        public static let badResponse = Code("badResponse")
        /// The request cannot be sent as it is: no valid URL, a header value the client cannot
        /// send, a client that was shut down… Not transient.
        public static let invalidRequest = Code("invalidRequest")
        /// The client cannot send a body with this method (URLSession refuses a body with
        /// `GET`). Not transient; another transport may send it.
        public static let bodyNotAllowed = Code("bodyNotAllowed")
        /// The response body is larger than the transport accepts. Not transient.
        public static let responseTooLarge = Code("responseTooLarge")
        /// A failure no other code describes; ``HTTPTransportError/underlying`` says what.
        /// Transient, as any failure to reach the server was before codes existed.
        public static let other = Code("other")
    }

    /// Why no response came back.
    public var code: Code
    /// The reason in words, naming the host: `connection refused by 127.0.0.1:8080`.
    public var message: String
    /// The authority (`host` or `host:port`) of the request, when the request had one.
    public var host: String?
    /// The client's own error (a `URLError`, an AsyncHTTPClient or SwiftNIO error), kept for
    /// diagnosis; `nil` when the transport itself found the problem.
    public var underlying: (any Error)?

    /// - Parameters:
    ///   - code: Why no response came back.
    ///   - message: The reason in words, naming the host.
    ///   - host: The request's authority.
    ///   - underlying: The client's own error.
    public init(code: Code, message: String, host: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.host = host
        self.underlying = underlying
    }

    /// An ``Code/invalidRequest`` error: what this initializer meant before errors had codes.
    @available(*, deprecated, message: "give the reason a code: init(code:message:host:underlying:)")
    public init(_ message: String) {
        self.init(code: .invalidRequest, message: message)
    }

    /// Whether the failure is worth retrying for a request that can be sent twice: the
    /// connection was refused, reset or lost, it timed out, the host name did not resolve,
    /// there was no network, the response was malformed, or an unclassified failure
    /// (``Code/other``). Not for a request that cannot be sent as it is
    /// (``Code/invalidRequest``, ``Code/bodyNotAllowed``), a TLS failure or a response that
    /// is too large: sending again gives the same result.
    ///
    /// An ``HTTPCoordinator`` retries a transient failure of an idempotent request (within
    /// its retry policy); nothing else.
    public var isTransient: Bool {
        switch code {
        case .invalidRequest, .bodyNotAllowed, .tls, .responseTooLarge: false
        default: true
        }
    }

    /// The ``message``.
    public var description: String { message }
}

extension HTTPTransportError {
    /// The host name of an authority: `example.com` for `example.com:8080`, `[::1]` for
    /// `[::1]:8080`.
    package static func hostName(of authority: String) -> String {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[...close])
        }
        return authority.split(separator: ":", maxSplits: 1).first.map(String.init) ?? authority
    }

    /// The words both transports use for a server certificate that is not trusted.
    package static func untrustedCertificate(_ reason: String) -> String {
        "certificate not trusted: \(reason) (use --cacert or --insecure)"
    }

    /// The words both transports use for a proxy that answered 407.
    package static let proxyRefusedCredentials =
        "the proxy asks for a user and password, or refused the ones given (407 Proxy Authentication Required)"

    /// The words both transports use for a handshake the server refused.
    package static let refusedHandshake =
        "the server refused the handshake; it may want a client certificate (--cert and --key)"

    /// The reason in words for the common codes, naming `authority` (`the server` when
    /// there is none): what both transports say for the same failure.
    package static func standardMessage(for code: Code, authority: String?) -> String {
        let target = authority ?? "the server"
        return switch code {
        case .connectionRefused: "connection refused by \(target)"
        case .hostNotFound: "cannot resolve host \(authority.map(hostName(of:)) ?? "of the request")"
        case .timedOut: "the connection to \(target) timed out"
        case .connectionLost: "the connection to \(target) was lost"
        case .notConnected: "not connected to the network (sending to \(target))"
        case .tls: "TLS connection to \(target) failed"
        case .badResponse: "bad response from \(target)"
        case .responseTooLarge: "the response from \(target) is too large"
        default: "the request to \(target) failed"
        }
    }
}
