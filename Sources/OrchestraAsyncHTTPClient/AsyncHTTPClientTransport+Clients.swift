import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import Orchestra
import OrchestraHTTP

/// The clients of a transport: the one given to it, or one per proxy a request can go through
/// (AsyncHTTPClient has one proxy per client), made when a request first needs it and shut down
/// together.
final class ClientRouter: Sendable {
    enum Source: Sendable {
        /// A client given by the caller, who shuts it down: every request goes through it.
        case given(HTTPClient)
        /// Clients made from `configuration`, one per proxy.
        case made(configuration: HTTPClient.Configuration, proxies: HTTPProxySettings, loop: any EventLoop)
    }

    /// What sets clients apart: the proxy (`nil`: straight to the server), and whether they
    /// decode bodies.
    struct Key: Hashable {
        var proxy: HTTPProxy?
        var decompresses: Bool
    }

    let source: Source
    /// The clients made so far.
    private let clients = Locked<[Key: HTTPClient]>([:])
    /// Whether clients are made here and every request goes straight to its server, and
    /// whether their configuration decodes bodies: a request's client is then found by its
    /// key alone, without copying the configuration out of `source` or asking the proxy
    /// settings (2 % of a 10,000-request run's CPU when done for each request).
    private let direct: (isDirect: Bool, decodes: Bool)

    init(_ source: Source) {
        self.source = source
        if case .made(let configuration, let proxies, _) = source {
            direct = (proxies == .none, !configuration.decompression.isDisabled)
        } else {
            direct = (false, false)
        }
    }

    /// The client for a request to `scheme://authority`, decoding its body or not.
    ///
    /// - Throws: `HTTPTransportError` (`.invalidRequest`) for a proxy AsyncHTTPClient cannot
    ///   use, naming it (without its password), or for `decompresses: false` on a given client.
    func client(
        scheme: String?, authority: String?, decompresses: Bool
    ) throws(HTTPTransportError) -> HTTPClient {
        if direct.isDirect,
            let client = clients.withLock({ $0[Key(proxy: nil, decompresses: decompresses && direct.decodes)] })
        {
            return client
        }
        switch source {
        case .given(let client):
            guard decompresses else {
                throw HTTPTransportError(
                    code: .invalidRequest,
                    message: "a transport over a given HTTPClient sends every request as that client is configured: "
                        + "it cannot turn decoding off for one request (use withTransport)",
                    host: authority)
            }
            return client
        case .made(let configuration, let proxies, let loop):
            // The host is read out of the authority only when there is a proxy to choose.
            let proxy: HTTPProxy? =
                proxies == .none
                ? nil
                : scheme.flatMap { scheme in
                    authority.flatMap { proxies.proxy(scheme: scheme, host: HTTPTransportError.hostName(of: $0)) }
                }
            let key = Key(proxy: proxy, decompresses: decompresses && direct.decodes)
            if let client = clients.withLock({ $0[key] }) { return client }
            var configuration = configuration
            configuration.proxy = try Self.clientProxy(proxy, authority: authority)
            if !key.decompresses { configuration.decompression = .disabled }
            // Made under the lock (an HTTPClient's init opens nothing), so that two requests
            // never make two clients for one key.
            let client = clients.withLock { clients in
                if let existing = clients[key] { return existing }
                let made = HTTPClient(eventLoopGroupProvider: .shared(loop), configuration: configuration)
                clients[key] = made
                return made
            }
            return client
        }
    }

    /// Shuts down the clients made here (a given client is its owner's to shut down).
    func shutdown() async throws {
        let made = clients.withLock { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        var failure: (any Error)?
        for client in made {
            do { try await client.shutdown() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    private static func clientProxy(
        _ proxy: HTTPProxy?, authority: String?
    ) throws(HTTPTransportError) -> HTTPClient.Configuration.Proxy? {
        guard let proxy else { return nil }
        switch proxy.kind {
        case .http:
            return .server(
                host: proxy.host, port: proxy.port,
                authorization: proxy.credentials.map { .basic(username: $0.user, password: $0.password) })
        case .socks5:
            guard proxy.credentials == nil else {
                throw HTTPTransportError(
                    code: .invalidRequest,
                    message: "the proxy \(proxy) asks for a user and password, which AsyncHTTPClient cannot send "
                        + "to a SOCKS5 proxy (use an http:// proxy or --transport urlsession)",
                    host: authority)
            }
            return .socksServer(host: proxy.host, port: proxy.port)
        case .https:
            throw HTTPTransportError(
                code: .invalidRequest,
                message: "the proxy \(proxy) is reached over TLS (https://), which AsyncHTTPClient cannot do "
                    + "(use an http:// proxy, which still tunnels HTTPS end to end, or --transport urlsession)",
                host: authority)
        }
    }
}

extension HTTPClient.Decompression {
    var isDisabled: Bool {
        if case .disabled = self { return true }
        return false
    }
}

extension AsyncHTTPClientTransport {
    /// AsyncHTTPClient's TLS configuration for `settings`, with every file read now, so that a
    /// missing or malformed file is an error before the first request, naming the file.
    ///
    /// - Throws: `HTTPTransportError` (`.tls`) naming the file that cannot be used.
    static func tlsConfiguration(_ settings: HTTPTLSSettings) throws(HTTPTransportError) -> TLSConfiguration? {
        guard !settings.isDefault else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let roots = settings.systemRoots {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: roots.path, isDirectory: &isDirectory) else {
                throw fileError("the trusted roots (SSL_CERT_FILE or SSL_CERT_DIR)", roots, "no such file or directory")
            }
            tls.trustRoots = isDirectory.boolValue ? .file(roots.path) : .certificates(try certificates(roots))
        }
        if let extra = settings.trustedCertificates {
            tls.additionalTrustRoots = [.certificates(try certificates(extra))]
        }
        if !settings.verifiesCertificates { tls.certificateVerification = .none }
        if let client = settings.clientCertificate {
            tls.certificateChain = try certificates(client.certificate).map { .certificate($0) }
            do {
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: client.key.path, format: .pem))
            } catch {
                throw fileError("the client key", client.key, readable(client.key) ? "not a PEM private key" : nil)
            }
        }
        return tls
    }

    private static func certificates(_ file: URL) throws(HTTPTransportError) -> [NIOSSLCertificate] {
        let found: [NIOSSLCertificate]
        do {
            found = try NIOSSLCertificate.fromPEMFile(file.path)
        } catch {
            throw fileError("the certificate file", file, readable(file) ? "not PEM certificates" : nil)
        }
        guard !found.isEmpty else { throw fileError("the certificate file", file, "it holds no certificate") }
        return found
    }

    private static func readable(_ file: URL) -> Bool { FileManager.default.isReadableFile(atPath: file.path) }

    private static func fileError(_ what: String, _ file: URL, _ why: String?) -> HTTPTransportError {
        let reason = why ?? (FileManager.default.fileExists(atPath: file.path) ? "cannot be read" : "no such file")
        return HTTPTransportError(code: .tls, message: "\(what) \(file.path): \(reason)", host: nil)
    }
}
