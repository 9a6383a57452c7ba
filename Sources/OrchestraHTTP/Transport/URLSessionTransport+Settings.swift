import Foundation

/// Options set on a transfer's curl handle before URLSession starts it (Linux): what
/// ``HTTPClientSettings`` asks for and Linux's URLSession has no setting for.
struct CurlOptions: Sendable {
    var strings: [(option: Int32, value: String)] = []
    var longs: [(option: Int32, value: Int)] = []
    /// Whether curl decodes the body: `false` is set once connected, after URLSession has
    /// configured the handle (it turns decoding on).
    var decodes = true

    var isEmpty: Bool { strings.isEmpty && longs.isEmpty && decodes }
}

#if canImport(FoundationNetworking)
/// What a ``URLSessionTransport`` sets on each transfer for its ``HTTPClientSettings``: its
/// TLS options (the same for every request) and the proxy of each request.
struct URLSessionTransferSettings: Sendable {
    let proxies: HTTPProxySettings
    /// The TLS options, every request's.
    let tls: CurlOptions
    /// A file this transport wrote (trusted certificates added to the system's), removed at
    /// its end.
    let temporaryFile: URL?

    /// The files the TLS settings name, read now: an error names a file that cannot be used.
    ///
    /// - Throws: ``HTTPTransportError`` (`.tls`) naming the file.
    init(_ settings: HTTPClientSettings) throws(HTTPTransportError) {
        self.proxies = settings.proxy
        var tls = CurlOptions()
        var temporaryFile: URL?
        let tlsSettings = settings.tls
        if let extra = tlsSettings.trustedCertificates {
            let added = try Self.certificates(in: extra, what: "the certificate file")
            // curl takes one file of roots: the system's and the added ones, written together.
            var roots = Data()
            if let system = tlsSettings.systemRoots, !system.hasDirectoryPath, !Self.isDirectory(system) {
                roots = try Self.certificates(in: system, what: "the trusted roots (SSL_CERT_FILE)")
            } else if let system = tlsSettings.systemRoots {
                tls.strings.append((Curl.caPath, system.path))
            } else if let bundle = Self.systemBundle {
                roots = (try? Data(contentsOf: bundle)) ?? Data()
            }
            roots.append(contentsOf: Array("\n".utf8))
            roots.append(added)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "orchestra-roots-\(UUID().uuidString).pem")
            guard
                FileManager.default.createFile(
                    atPath: file.path, contents: roots, attributes: [.posixPermissions: 0o600])
            else {
                throw HTTPTransportError(
                    code: .tls, message: "cannot write the trusted certificates to \(file.path)")
            }
            temporaryFile = file
            tls.strings.append((Curl.caInfo, file.path))
        } else if let system = tlsSettings.systemRoots {
            if Self.isDirectory(system) {
                tls.strings.append((Curl.caPath, system.path))
            } else {
                _ = try Self.certificates(in: system, what: "the trusted roots (SSL_CERT_FILE)")
                tls.strings.append((Curl.caInfo, system.path))
            }
        }
        if !tlsSettings.verifiesCertificates {
            tls.longs.append((Curl.verifyPeer, 0))
            tls.longs.append((Curl.verifyHost, 0))
        }
        if let client = tlsSettings.clientCertificate {
            _ = try Self.certificates(in: client.certificate, what: "the client certificate")
            guard let key = try? Data(contentsOf: client.key),
                String(decoding: key, as: UTF8.self).contains("PRIVATE KEY-----")
            else {
                throw Self.fileError("the client key", client.key, "not a PEM private key")
            }
            tls.strings.append((Curl.clientCertificate, client.certificate.path))
            tls.strings.append((Curl.clientCertificateType, "PEM"))
            tls.strings.append((Curl.clientKey, client.key.path))
        }
        self.tls = tls
        self.temporaryFile = temporaryFile
    }

    /// The options of a request to `url`: the TLS options and its proxy (none: an empty
    /// `CURLOPT_PROXY`, so that curl reads no environment variable either).
    func options(for url: URL?) -> CurlOptions {
        // The proxy of an IPv6 address is chosen by the address, not its stand-in.
        let url = IPLiteralURL.realURL(url) ?? url
        var options = tls
        let proxy = url.flatMap { url in url.scheme.flatMap { scheme in url.host.map { (scheme, $0) } } }.flatMap {
            proxies.proxy(scheme: $0.0, host: $0.1)
        }
        if let proxy {
            let host = proxy.host.contains(":") ? "[\(proxy.host)]" : proxy.host
            let scheme = proxy.kind == .socks5 ? "socks5h" : proxy.kind.rawValue
            options.strings.append((Curl.proxy, "\(scheme)://\(host):\(proxy.port)"))
            if let credentials = proxy.credentials {
                options.strings.append((Curl.proxyUserName, credentials.user))
                options.strings.append((Curl.proxyPassword, credentials.password))
            }
        } else {
            options.strings.append((Curl.proxy, ""))
        }
        return options
    }

    /// The system's bundle of roots, where Linux distributions keep it.
    private static let systemBundle: URL? = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem",
    ].first { FileManager.default.isReadableFile(atPath: $0) }.map { URL(fileURLWithPath: $0) }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The bytes of a PEM file that holds at least one certificate.
    private static func certificates(in file: URL, what: String) throws(HTTPTransportError) -> Data {
        guard let data = try? Data(contentsOf: file) else {
            throw fileError(
                what, file, FileManager.default.fileExists(atPath: file.path) ? "cannot be read" : "no such file")
        }
        guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw fileError(what, file, "not PEM certificates")
        }
        return data
    }

    private static func fileError(_ what: String, _ file: URL, _ why: String) -> HTTPTransportError {
        HTTPTransportError(code: .tls, message: "\(what) \(file.path): \(why)")
    }
}
#endif
