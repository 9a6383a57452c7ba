import ArgumentParser
import Foundation
import Orchestra
import OrchestraAsyncHTTPClient
import OrchestraHTTP
import OrchestraWorkflow

/// `--transport asynchttpclient|urlsession`, shared by `orchestra run` and `orchestra demo`:
/// which HTTP client sends the requests.
///
/// On Linux the default is AsyncHTTPClient: Foundation's URLSession there is several times
/// slower on loopback (about 4,000 requests/s against 10,000–19,000) and has bugs of its own.
/// On Apple platforms URLSession, the system's client, stays the default.
struct TransportOptions: ParsableArguments {
    enum Kind: String, ExpressibleByArgument, CaseIterable, Sendable {
        case asynchttpclient
        case urlsession

        #if os(Linux)
        static let platformDefault = Kind.asynchttpclient
        #else
        static let platformDefault = Kind.urlsession
        #endif
    }

    @Option(
        help: ArgumentHelp(
            """
            The HTTP client: asynchttpclient (SwiftNIO; the default on Linux, where it is the \
            faster) or urlsession (Foundation's; the default on Apple platforms).
            """,
            valueName: "client"
        )
    )
    var transport: Kind = .platformDefault

    @Option(
        help: ArgumentHelp(
            "Trust the CA certificates in this PEM file, besides the system's roots (as the workflow's tls.cacert).",
            valueName: "file"))
    var cacert: String?

    @Flag(
        name: [.customShort("k"), .long],
        help: "Do not verify servers' TLS certificates (anyone on the path can then read and change the traffic).")
    var insecure = false

    @Option(
        help: ArgumentHelp(
            "Present this client certificate (PEM) to servers that ask for one; needs --key.", valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("The private key (PEM) of --cert.", valueName: "file"))
    var key: String?

    @Option(
        help: ArgumentHelp(
            """
            Send every request through this proxy (http://, https:// or socks5://, with user:password@ if it \
            needs them); "" for none. Without it, http_proxy, https_proxy/HTTPS_PROXY, ALL_PROXY and NO_PROXY \
            are read as curl reads them.
            """,
            valueName: "url"))
    var proxy: String?

    @Option(
        help: ArgumentHelp(
            "Hosts that bypass the proxy, comma-separated (domains, IP addresses, ranges; * for all), in place of NO_PROXY.",
            valueName: "list"))
    var noproxy: String?

    /// The client settings the flags, the workflow's `tls:` and the environment ask for: a flag
    /// wins over the file, the file over the environment.
    ///
    /// - Throws: ``TransportSetupError`` naming the flag, field or variable that cannot be used.
    func settings(
        tls fileTLS: WorkflowTLS? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(TransportSetupError) -> HTTPClientSettings {
        // The roots SSL_CERT_FILE or SSL_CERT_DIR name (no proxy variable read here).
        var settings =
            (try? HTTPClientSettings.environment(environment.filter { $0.key.hasPrefix("SSL_CERT_") })) ?? .init()
        if let proxy {
            do {
                settings.proxy = .init(proxy: proxy.isEmpty ? nil : try HTTPProxy(url: proxy))
            } catch {
                throw TransportSetupError(message: "--proxy: \(error.message)")
            }
            settings.proxy.noProxy = Self.list(environment["NO_PROXY"] ?? environment["no_proxy"])
        } else {
            do {
                settings.proxy = try .environment(environment)
            } catch {
                throw TransportSetupError(message: error.message)
            }
        }
        if let noproxy { settings.proxy.noProxy = Self.list(noproxy) }
        let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        func path(_ text: String) -> URL { URL(fileURLWithPath: text, relativeTo: current).standardizedFileURL }
        settings.tls.trustedCertificates = cacert.map(path) ?? fileTLS?.cacert
        settings.tls.verifiesCertificates = !(insecure || fileTLS?.insecure == true)
        switch (cert, key) {
        case (let cert?, let key?):
            settings.tls.clientCertificate = .init(certificate: path(cert), key: path(key))
        case (nil, nil):
            if let cert = fileTLS?.cert, let key = fileTLS?.key {
                settings.tls.clientCertificate = .init(certificate: cert, key: key)
            }
        case (_?, nil): throw TransportSetupError(message: "--cert needs --key, the certificate's private key")
        case (nil, _?): throw TransportSetupError(message: "--key needs --cert, the certificate it belongs to")
        }
        return settings
    }

    /// The passwords of the proxies `--proxy` or the environment name: secrets, redacted in
    /// what a run shows.
    func proxyPasswords(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let proxies = (try? settings(environment: environment).proxy) ?? .none
        return Array(
            Set([proxies.http, proxies.https].compactMap { $0?.credentials?.password }.filter { !$0.isEmpty }))
    }

    private static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Runs `body` with a transport of the chosen kind, then releases it however `body` ends:
    /// AsyncHTTPClient's client is shut down (after `body` returns or throws, and so after a
    /// run a signal cancelled), URLSession's sessions are invalidated when the transport is
    /// released.
    ///
    /// The transport allows `connectionsPerHost` connections to one host: a workflow's
    /// ``WorkflowLimits/connectionsPerHost`` (its `limit`, at least 64), so that the client never
    /// queues requests the coordinator has let through. It reaches servers as ``settings(tls:environment:)``
    /// says; with verification off, `command` prints a warning once, on stderr.
    ///
    /// Cancelling the calling task cancels the requests in flight (each transport ends them
    /// with `CancellationError`); the client is still shut down.
    ///
    /// - Throws: `ExitCode(2)` after saying which setting cannot be used (`command: error: …`);
    ///   what `body` throws.
    func withTransport<T: Sendable>(
        connectionsPerHost connections: Int = WorkflowLimits.minimumConnectionsPerHost,
        tls: WorkflowTLS? = nil, command: String,
        _ body: (any HTTPTransport) async throws -> T
    ) async throws -> T {
        let settings: HTTPClientSettings
        do {
            settings = try self.settings(tls: tls)
        } catch {
            Console.standardError.line("\(command): error: \(TerminalText.safe(error.message))")
            throw ExitCode(2)
        }
        if !settings.tls.verifiesCertificates {
            Console.standardError.line(
                "\(command): warning: TLS certificates are not verified (--insecure or tls.insecure): "
                    + "anyone on the path can read and change the traffic")
        }
        switch transport {
        case .asynchttpclient:
            let opened = Locked(false)
            do {
                return try await AsyncHTTPClientTransport.withTransport(
                    maximumConnectionsPerHost: connections, settings: settings
                ) { transport in
                    opened.withLock { $0 = true }
                    return try await body(transport)
                }
            } catch let error as HTTPTransportError where !opened.withLock({ $0 }) {
                Console.standardError.line("\(command): error: \(TerminalText.safe(error.message))")
                throw ExitCode(2)
            }
        case .urlsession:
            let transport: URLSessionTransport
            do {
                transport = try URLSessionTransport(maximumConnectionsPerHost: connections, settings: settings)
            } catch {
                Console.standardError.line("\(command): error: \(TerminalText.safe(error.message))")
                throw ExitCode(2)
            }
            return try await body(transport)
        }
    }
}

/// A transport setting that cannot be used, in words.
struct TransportSetupError: Error {
    var message: String
}

/// A size flag: `65536`, `512KB`, `64MB`, `1GB` (``ByteSize``).
struct ByteSizeArgument: ExpressibleByArgument, Sendable {
    var bytes: Int

    init(bytes: Int) {
        self.bytes = bytes
    }

    init?(argument: String) {
        guard let bytes = ByteSize.parse(argument) else { return nil }
        self.bytes = bytes
    }

    var defaultValueDescription: String { bytes % (1 << 20) == 0 ? "\(bytes >> 20)MB" : "\(bytes)" }
}
