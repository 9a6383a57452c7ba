import Foundation
public import HTTPTypes
import Orchestra

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``HTTPTransport`` over `URLSession`, on Apple platforms and on Linux.
///
/// It returns every response as it is, whatever its status: it follows no redirect (a 3xx
/// comes back with its `Location` and body) and answers no authentication challenge (a 401
/// comes back at once, whatever its `WWW-Authenticate`). It makes its own session, configured
/// so that it does not limit or time out what the coordinator manages:
/// `httpMaximumConnectionsPerHost` raised to `maximumConnectionsPerHost` (Linux's URLSession
/// defaults to 6 per host), request and resource timeouts of an hour (the coordinator's
/// per-request timeout applies first), no cache, no cookies, no credential storage. Every
/// request goes through one session delegate, which streams the body and reports progress.
///
/// What URLSession does not allow, it refuses before sending, with an
/// ``HTTPTransportError``, rather than sending something else:
/// - A body with `GET`: code ``HTTPTransportError/Code/bodyNotAllowed``
///   (`AsyncHTTPClientTransport` sends it).
/// - On Linux, a header value whose bytes are not UTF-8: code
///   ``HTTPTransportError/Code/invalidRequest``, naming the header. Other non-ASCII values go
///   out as their UTF-8 bytes, on Linux as on Apple platforms.
///
/// Headers URLSession adds when the request has none of its own (they cannot be removed;
/// set them on the request to choose their values): `User-Agent`, `Accept-Language`,
/// `Accept: */*`, `Accept-Encoding` (the response body is then decompressed, while its
/// `Content-Encoding` and `Content-Length` headers stay as the server sent them; on Linux, a
/// 301–308 body comes back as sent, below),
/// `Connection: keep-alive`, and on Linux `Content-Type: application/x-www-form-urlencoded`
/// for a `POST` with a body.
///
/// The body is limited to `maximumBodySize` bytes *decoded*: URLSession inflates a compressed
/// body before the transport sees it, and the transport counts what arrives, cancelling the
/// request past the limit, with an ``HTTPTransportError`` of code
/// ``HTTPTransportError/Code/responseTooLarge``. Memory and time stay at the limit too, on
/// Linux as well, where URLSession (over curl) inflates a body as fast as it arrives and cannot
/// pause a transfer: the session waits for the transport to take each inflated part before
/// curl produces the next, and the transfer is paused at the limit until its cancellation
/// lands (BENCHMARKS.md#hostile-servers-and-files).
///
/// On Linux, URLSession keeps the body of a 301–308 response to itself until the transfer ends
/// (it holds it whole, copying it on every part, and gives the delegate none of it), and while
/// the server keeps sending, the task's cancellation cannot land. There such a body is limited
/// to 1 MiB (or `maximumBodySize`, if smaller), counted as it arrives, and comes back as sent,
/// not decompressed (its `Content-Encoding` says how it is encoded): past the limit the
/// transfer is stopped and the request fails with code
/// ``HTTPTransportError/Code/responseTooLarge`` (`the response from HOST is larger than 1048576
/// bytes (a 302 response, whose body URLSession on Linux holds whole)`), within a tenth of a
/// second of a server that never stops sending, or of a gzip bomb sent as a redirect's body.
///
/// Errors: `URLError.cancelled` becomes `CancellationError`; every other client error becomes
/// an ``HTTPTransportError`` whose code says why, with the `URLError` as its
/// ``HTTPTransportError/underlying`` error.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    // @unchecked: URLSession is thread-safe but not declared Sendable on Linux; the session is
    // never mutated after init.
    private let session: URLSession
    private let delegate: URLSessionExchangeDelegate
    /// The connections per host the session may open.
    public let maximumConnectionsPerHost: Int
    /// The largest response body accepted, counted decoded.
    public let maximumBodySize: Int
    #if canImport(FoundationNetworking)
    /// What each transfer's curl handle is given for the transport's settings.
    private let transfer: URLSessionTransferSettings
    #endif

    /// - Parameters:
    ///   - maximumConnectionsPerHost: Connections per host the session may open; set it at
    ///     least as high as the coordinator's per-host limit (64 by default).
    ///   - maximumBodySize: The largest response body accepted, counted after URLSession
    ///     decodes it (64 MiB by default, as `AsyncHTTPClientTransport`); a larger one cancels
    ///     the request and throws ``HTTPTransportError`` with code
    ///     ``HTTPTransportError/Code/responseTooLarge``.
    public convenience init(maximumConnectionsPerHost: Int = 64, maximumBodySize: Int = 64 << 20) {
        // The default settings name no file: nothing to read, nothing to fail.
        try! self.init(
            maximumConnectionsPerHost: maximumConnectionsPerHost, maximumBodySize: maximumBodySize, settings: .init())
    }

    /// A transport that reaches servers as `settings` say.
    ///
    /// On Linux, URLSession (over libcurl) has no setting for them, and the transport sets
    /// them on each transfer's curl handle before it starts:
    /// - **TLS**: ``HTTPTLSSettings/trustedCertificates`` are written with the system's roots
    ///   (or ``HTTPTLSSettings/systemRoots``) into a file of the temporary directory (mode 0600,
    ///   removed when the transport is released), which curl reads; verification can be turned
    ///   off, and a client certificate presented (PEM files).
    /// - **Proxies**: each request goes through the proxy ``HTTPClientSettings/proxy`` names for
    ///   it (HTTPS through `CONNECT`; `http://`, `https://` and `socks5://` proxies, with a user
    ///   and password if the proxy's URL has them), or straight to its server: curl's own
    ///   reading of the environment is turned off, so that both transports go the same way.
    ///   Pass `HTTPClientSettings.environment()` to follow curl's variables.
    /// - **Compression**: URLSession always asks for compressed bodies and decodes them;
    ///   ``HTTPClientSettings/decompresses`` set to `false` is refused (below).
    ///
    /// If a transfer's handle cannot be reached (another Foundation), its request fails with
    /// an ``HTTPTransportError`` saying so, never sent without the settings.
    ///
    /// On Apple platforms, URLSession follows the system's trust settings and proxies; this
    /// transport does not yet apply other ones there, and refuses them.
    ///
    /// - Throws: ``HTTPTransportError`` (`.tls`) naming a certificate or key file that cannot
    ///   be used; ``HTTPTransportError`` (`.invalidRequest`) for a setting this platform's
    ///   URLSession cannot follow.
    public init(
        maximumConnectionsPerHost: Int = 64, maximumBodySize: Int = 64 << 20, settings: HTTPClientSettings
    ) throws(HTTPTransportError) {
        guard settings.decompresses else {
            throw HTTPTransportError(
                code: .invalidRequest,
                message: "URLSession always decodes compressed bodies: it cannot return one as sent "
                    + "(use AsyncHTTPClientTransport)")
        }
        #if canImport(FoundationNetworking)
        self.transfer = try URLSessionTransferSettings(settings)
        #else
        guard settings.tls.isDefault, settings.proxy == .none else {
            throw HTTPTransportError(
                code: .invalidRequest,
                message: "URLSessionTransport follows the system's trust and proxy settings on this platform and "
                    + "cannot apply others yet (use AsyncHTTPClientTransport)")
        }
        #endif
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        configuration.timeoutIntervalForRequest = 3_600
        configuration.timeoutIntervalForResource = 3_600
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        #if canImport(FoundationNetworking)
        // Caches nothing; sets up each task's transfer (see RedirectBodyLimit).
        configuration.urlCache = TransferSetupCache()
        #else
        configuration.urlCache = nil
        #endif
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        let delegate = URLSessionExchangeDelegate()
        self.delegate = delegate
        #if canImport(FoundationNetworking)
        // Each part of the body taken by the delegate before curl produces the next: see
        // InlineDelegateQueue.
        let queue: OperationQueue? = InlineDelegateQueue()
        #else
        let queue: OperationQueue? = nil
        #endif
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.maximumBodySize = maximumBodySize
    }

    deinit {
        session.invalidateAndCancel()
        #if canImport(FoundationNetworking)
        if let file = transfer.temporaryFile { try? FileManager.default.removeItem(at: file) }
        #endif
    }

    /// Body bytes URLSession delivered for requests that had already ended (failed at the
    /// limit, cancelled): how long a transfer went on after its request ended (tests).
    package var bytesReceivedAfterTheEnd: Int { delegate.bytesAfterTheEnd }

    /// Requests whose task URLSession has not completed yet, whether or not the request ended
    /// (tests).
    package var transfersInProgress: Int { delegate.transfersInProgress }

    /// Sends `request` and returns the response, whatever its status, with its whole body.
    ///
    /// Cancellation: cancelling the calling task cancels the request, which throws
    /// `CancellationError`.
    ///
    /// - Throws: `CancellationError`; ``HTTPTransportError`` when no response came back, the
    ///   request cannot be sent as it is, or the decoded body is larger than
    ///   ``maximumBodySize``.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await exchange(request, body: body, progress: nil)
    }

    /// Sends `request` like ``send(_:body:)``, calling `progress` as the body's bytes arrive
    /// (one call at a time, all of them before this returns; on Apple platforms on the
    /// session's delegate queue, on Linux on a queue of the transport).
    public func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, body: body, progress: progress)
    }

    /// Sends `request` and handles its body as `body` says: a sink gets each part as it
    /// arrives (decoded unless `body.decompresses` is `false`), one at a time, and the body
    /// returned is empty; a body held in memory is limited to `body.maximumSize` (or the
    /// transport's limit). A file to upload is read into memory (URLSession's upload tasks are
    /// not used). With `decompresses: false`, a request without an `Accept-Encoding` of its own
    /// asks for `identity`, and on Linux the body comes back as sent; Apple's URLSession always
    /// decodes, and such a request is refused there.
    ///
    /// - Throws: As ``send(_:body:)``; `TimeoutError` once `timeout` has passed; what the sink
    ///   throws, as it is.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        let data = try content?.contents()
        guard let timeout else { return try await exchange(request, body: data, receiving: body, progress: progress) }
        return try await withTimeout(timeout) {
            try await self.exchange(request, body: data, receiving: body, progress: progress)
        }
    }

    /// One exchange: the request converted (or refused), one data task through the
    /// delegate, the response converted, client errors mapped.
    private func exchange(
        _ request: HTTPRequest, body: Data?, receiving handling: HTTPResponseBodyHandling = .standard,
        progress: (@Sendable (Int, Int?) -> Void)?
    ) async throws -> (HTTPResponse, Data) {
        var request = request
        if !handling.decompresses {
            #if canImport(FoundationNetworking)
            if request.headerFields[.acceptEncoding] == nil { request.headerFields[.acceptEncoding] = "identity" }
            #else
            throw HTTPTransportError(
                code: .invalidRequest,
                message: "URLSession on this platform always decodes compressed bodies: it cannot return one as sent "
                    + "(use AsyncHTTPClientTransport)",
                host: request.authority)
            #endif
        }
        let urlRequest = try Self.urlRequest(for: request, body: body)
        try Task.checkCancellation()
        let task = SendableTask(session.dataTask(with: urlRequest))
        let delegate = self.delegate
        let limit = handling.maximumSize.map { min($0, maximumBodySize) } ?? maximumBodySize
        #if canImport(FoundationNetworking)
        var options = transfer.options(for: urlRequest.url)
        options.decodes = handling.decompresses
        #else
        let options = CurlOptions()
        #endif
        // Known before the cancellation handler can run: a cancellation or a completion that
        // comes before the request waits is kept for it (see URLSessionExchanges).
        delegate.prepare(task)
        do {
            let reply = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation {
                    (continuation: CheckedContinuation<URLSessionReply, any Error>) in
                    delegate.start(
                        task,
                        .init(
                            continuation: continuation, progress: progress, limit: limit,
                            authority: request.authority, sink: handling.sink),
                        options: options)
                }
            } onCancel: {
                // Cancels the task without waiting; its completion resumes the request.
                delegate.cancel(task)
            }
            let response = reply.response
            if reply.body.isEmpty, let progress {
                progress(0, response.expectedContentLength >= 0 ? Int(response.expectedContentLength) : nil)
            }
            return (try Self.httpResponse(from: response, authority: request.authority), reply.body)
        } catch let error as HTTPTransportError {
            throw error
        } catch let failure as HTTPResponseSinkFailure {
            throw failure.error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.mapped(error, authority: request.authority)
        }
    }
}
