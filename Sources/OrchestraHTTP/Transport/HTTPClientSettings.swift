import Foundation

/// Whom a transport trusts over TLS, and which certificate it presents.
///
/// ```swift
/// var tls = HTTPTLSSettings()
/// tls.trustedCertificates = URL(fileURLWithPath: "corp-ca.pem")   // added to the system's roots
/// tls.clientCertificate = .init(certificate: URL(fileURLWithPath: "me.pem"), key: URL(fileURLWithPath: "me.key"))
/// ```
public struct HTTPTLSSettings: Sendable, Hashable {
    /// A certificate and its private key, both PEM files, presented to servers that ask for one.
    public struct ClientCertificate: Sendable, Hashable {
        /// The certificate (PEM; more than one: the chain, leaf first).
        public var certificate: URL
        /// Its private key (PEM, not encrypted).
        public var key: URL

        public init(certificate: URL, key: URL) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// A PEM file of CA certificates trusted *in addition to* the system's roots (curl's
    /// `--cacert`, except that curl replaces the roots).
    public var trustedCertificates: URL?
    /// Whether servers' certificates are verified (their chain and their name). `false` is
    /// curl's `--insecure`: anyone between you and the server can read and change the traffic.
    public var verifiesCertificates: Bool
    /// The certificate presented to a server that asks for one (mutual TLS).
    public var clientCertificate: ClientCertificate?
    /// The system's roots: `nil` for the platform's own, or a PEM file or a directory of PEM
    /// files in their place (OpenSSL's `SSL_CERT_FILE` and `SSL_CERT_DIR`, read by
    /// ``HTTPClientSettings/environment(_:)``).
    public var systemRoots: URL?

    public init(
        trustedCertificates: URL? = nil, verifiesCertificates: Bool = true,
        clientCertificate: ClientCertificate? = nil, systemRoots: URL? = nil
    ) {
        self.trustedCertificates = trustedCertificates
        self.verifiesCertificates = verifiesCertificates
        self.clientCertificate = clientCertificate
        self.systemRoots = systemRoots
    }

    /// Whether these are the platform's defaults (nothing added, nothing turned off).
    public var isDefault: Bool { self == HTTPTLSSettings() }
}

/// How a transport reaches servers: TLS trust and client certificate, proxies, compressed
/// bodies. Both transports of this package take them (`URLSessionTransport(settings:)`,
/// `AsyncHTTPClientTransport.withTransport(settings:)`), so a workflow reaches a server the
/// same way through either.
///
/// ```swift
/// var settings = try HTTPClientSettings.environment()       // proxies and roots as curl reads them
/// settings.tls.trustedCertificates = URL(fileURLWithPath: "corp-ca.pem")
/// let transport = try URLSessionTransport(settings: settings)
/// ```
public struct HTTPClientSettings: Sendable, Hashable {
    /// Whom to trust over TLS and which certificate to present.
    public var tls: HTTPTLSSettings
    /// Which proxy each request goes through. The default is none; ``environment(_:)`` reads
    /// curl's variables.
    public var proxy: HTTPProxySettings
    /// Whether to ask for compressed bodies (`Accept-Encoding: gzip, deflate` on a request that
    /// has no `Accept-Encoding` of its own) and decode a gzip or deflate body, whatever asked
    /// for it. The body limit counts decoded bytes. On by default.
    public var decompresses: Bool

    public init(tls: HTTPTLSSettings = .init(), proxy: HTTPProxySettings = .none, decompresses: Bool = true) {
        self.tls = tls
        self.proxy = proxy
        self.decompresses = decompresses
    }

    /// The settings the environment asks for, as curl and OpenSSL read it: the proxies of
    /// ``HTTPProxySettings/environment(_:)``, and `SSL_CERT_FILE` (or else `SSL_CERT_DIR`) in
    /// place of the system's roots.
    ///
    /// - Throws: ``HTTPProxyError`` naming a proxy variable whose value cannot be used.
    public static func environment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(HTTPProxyError) -> HTTPClientSettings {
        var settings = HTTPClientSettings(proxy: try .environment(environment))
        if let file = environment["SSL_CERT_FILE"], !file.isEmpty {
            settings.tls.systemRoots = URL(fileURLWithPath: file)
        } else if let directory = environment["SSL_CERT_DIR"], !directory.isEmpty {
            // OpenSSL takes a list; the first directory is the one used here.
            let first = directory.split(separator: ":").first.map(String.init) ?? directory
            settings.tls.systemRoots = URL(fileURLWithPath: first, isDirectory: true)
        }
        return settings
    }
}
