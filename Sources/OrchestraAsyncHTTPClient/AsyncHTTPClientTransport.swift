public import AsyncHTTPClient
import Foundation
public import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import Orchestra
public import OrchestraHTTP
import Tracing

/// An `HTTPTransport` over AsyncHTTPClient (SwiftNIO), for servers. In its own
/// product so that app targets using `OrchestraHTTP` never pull in SwiftNIO.
///
/// An `HTTPClient` must be shut down before it is released. Use the scoped form, which makes
/// and shuts down its own client, or give it a client you shut down yourself:
///
/// ```swift
/// try await AsyncHTTPClientTransport.withTransport { transport in
///     let api = HTTPCoordinator(transport: transport, configuration: .init(maxConcurrentRequests: 32))
///     …
/// }
/// ```
///
/// It returns every response as it is, whatever its status: the client it makes follows no
/// redirect (`redirectConfiguration = .disallow`, so a 3xx comes back with its `Location` and
/// body), and AsyncHTTPClient answers no authentication challenge. It allows
/// `maximumConnectionsPerHost` connections per host (AsyncHTTPClient's default is 8), does
/// not retry a failed connection (the coordinator retries), and has a 10 s connect timeout and
/// an hour-long read timeout (the coordinator's per-request timeout applies first). It sends the request's headers as they are (non-ASCII values as their
/// UTF-8 bytes) and adds only what HTTP/1.1 needs (`Host`, `Content-Length` or
/// `Transfer-Encoding`); a body is sent with any method, `GET` included.
///
/// A cancelled task's request is cancelled and ends with `CancellationError`. When no response
/// comes back, it throws an `HTTPTransportError` whose code says why, with the
/// client's error as its underlying error. Bodies are collected in memory, up to
/// `maximumBodySize`.
public final class AsyncHTTPClientTransport: HTTPTransport {
    private let clients: ClientRouter
    /// The connections per host the client allows.
    public let maximumConnectionsPerHost: Int
    private let maximumBodySize: Int

    /// A transport over `client`, which you shut down after the last request.
    ///
    /// Configure `client` as ``withTransport(maximumConnectionsPerHost:maximumBodySize:settings:_:)``
    /// does, or the transport breaks its contract: `redirectConfiguration = .disallow` (a
    /// client that follows redirects hides the 3xx from the coordinator, which follows them by
    /// its own rules), `connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit` at least
    /// `maximumConnectionsPerHost`, `connectionPool.retryConnectionEstablishment = false` (else a
    /// refused connection is retried out of sight and reported only after the connect
    /// timeout), and a long read timeout. Its proxy, TLS and decompression settings are yours:
    /// every request goes through `client` as it is configured.
    ///
    /// - Parameters:
    ///   - client: The client that sends the requests.
    ///   - maximumConnectionsPerHost: The connections per host `client` allows.
    ///   - maximumBodySize: The largest response body accepted; a larger one throws
    ///     `HTTPTransportError` with code `.responseTooLarge`.
    public init(client: HTTPClient, maximumConnectionsPerHost: Int, maximumBodySize: Int = 64 << 20) {
        self.clients = ClientRouter(.given(client))
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.maximumBodySize = maximumBodySize
    }

    private init(clients: ClientRouter, maximumConnectionsPerHost: Int, maximumBodySize: Int) {
        self.clients = clients
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.maximumBodySize = maximumBodySize
    }

    /// Runs `body` with a transport over new clients, then shuts the clients down, however
    /// `body` ends.
    ///
    /// The client follows no redirect, allows `maximumConnectionsPerHost` connections per
    /// host, does not retry a failed connection (a refused connection fails its requests at
    /// once; the coordinator decides about retries), and times out a connection attempt after
    /// 10 s and a read after an hour. It speaks HTTP/2 to a server that offers it over TLS.
    ///
    /// `settings` say how servers are reached:
    /// - **TLS**: `HTTPTLSSettings.trustedCertificates` are trusted besides the system's
    ///   roots (or `HTTPTLSSettings.systemRoots` in their place), verification can be turned
    ///   off, and a client certificate presented. Every file is read before `body` runs.
    /// - **Proxies**: each request goes through the proxy `HTTPClientSettings.proxy` names
    ///   for its scheme and host (an HTTP proxy tunnels every request with `CONNECT`, as
    ///   AsyncHTTPClient does; a SOCKS5 proxy is supported without a password, an `https://`
    ///   proxy not at all: such a request fails with an error that says so). The default is no
    ///   proxy: AsyncHTTPClient reads no environment variable; pass
    ///   `HTTPClientSettings.environment()` to follow curl's.
    /// - **Compression**: with `HTTPClientSettings.decompresses` (the default), a request
    ///   without an `Accept-Encoding` of its own asks for `deflate, gzip`, and a gzip or
    ///   deflate body is decoded, whatever asked for it; `maximumBodySize` then counts decoded
    ///   bytes, so a small body that inflates past it fails as soon as it does. The response
    ///   keeps the server's `Content-Encoding` and `Content-Length` headers.
    ///
    /// The clients run on one event loop of SwiftNIO's shared group: their connections and
    /// callbacks share one thread, so a request never hops between loops (less CPU per request
    /// than the whole group: Benchmarks/History.md, figures from code comments). One loop
    /// handles tens of thousands of small requests a second; for more, make a client on a
    /// group of your choice and pass it
    /// to ``init(client:maximumConnectionsPerHost:maximumBodySize:)``.
    ///
    /// Cancellation: cancelling the calling task cancels the requests `body` is waiting for;
    /// the clients are shut down all the same.
    ///
    /// - Throws: `HTTPTransportError` (`.tls`) naming a certificate or key file that cannot be
    ///   used, before `body` runs; what `body` throws; or a client's shutdown error.
    public static func withTransport<T: Sendable>(
        maximumConnectionsPerHost: Int = 64,
        maximumBodySize: Int = 64 << 20,
        settings: HTTPClientSettings = .init(),
        _ body: (AsyncHTTPClientTransport) async throws -> T
    ) async throws -> T {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: maximumConnectionsPerHost)
        // A failed connection fails its requests at once: the coordinator retries them by its
        // own policy, instead of the client retrying out of sight until its connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout = .init(connect: .seconds(10), read: .hours(1))
        configuration.tlsConfiguration = try tlsConfiguration(settings.tls)
        // The collector counts what the decoder gives it, part by part (each inflated from at
        // most one read, so bounded), against the request's limit; a sink has none.
        configuration.decompression = settings.decompresses ? .enabled(limit: .none) : .disabled
        // A span per request costs even when nobody records it: keep only a tracer the app set up.
        if configuration.tracing.tracer is NoOpTracer { configuration.tracing.tracer = nil }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let clients = ClientRouter(.made(configuration: configuration, proxies: settings.proxy, loop: loop))
        let transport = AsyncHTTPClientTransport(
            clients: clients, maximumConnectionsPerHost: maximumConnectionsPerHost, maximumBodySize: maximumBodySize)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(transport))
        } catch {
            result = .failure(error)
        }
        try await clients.shutdown()
        return try result.get()
    }

    /// Sends `request` and returns the response, whatever its status, with its whole body.
    ///
    /// Cancellation: cancelling the calling task cancels the request, which throws
    /// `CancellationError`.
    ///
    /// - Throws: `CancellationError`; `HTTPTransportError` when no response
    ///   came back, the request cannot be sent as it is, or the body is larger than
    ///   `maximumBodySize`.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await send(request, body: body, progress: { _, _ in })
    }

    /// Sends `request` like ``send(_:body:)``, calling `progress` as each part of the body
    /// arrives.
    public func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        try await send(request, content: body.map(HTTPRequestBody.data), progress: progress)
    }

    /// Sends `request` with `content`; a file is streamed as it is read, 64 KiB at a time, so
    /// a large upload never sits in memory.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, content: content, progress: progress, timeout: nil)
    }

    /// Sends `request` like ``send(_:content:progress:)``, stopping it once `timeout` has
    /// passed.
    ///
    /// A body in memory (or none) is timed by the process's shared timer, which fails the
    /// client's request at the deadline: the request runs in the calling task, with no second
    /// task racing it, which is most of what a timeout would cost per request. A file upload
    /// is raced against the deadline by `withTimeout`.
    ///
    /// - Throws: `TimeoutError` with `timeout` when the time ran out first (unless the task was
    ///   cancelled: then `CancellationError`); otherwise as ``send(_:content:progress:)``.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, content: content, receiving: .standard, progress: progress, timeout: timeout)
    }

    /// Sends `request` and handles its body as `body` says: a sink gets each part as it arrives
    /// (decoded unless `body.decompresses` is `false`), on the client's event loop, and the
    /// body returned is empty; a body held in memory is limited to `body.maximumSize` (or the
    /// transport's limit). With `decompresses: false`, a request without an `Accept-Encoding`
    /// of its own asks for `identity`, and the body comes back as sent.
    ///
    /// - Throws: As ``send(_:content:progress:timeout:)`` (`timeout` `nil`: none); what the sink
    ///   throws, as it is.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        var request = request
        if !body.decompresses, request.headerFields[.acceptEncoding] == nil {
            request.headerFields[.acceptEncoding] = "identity"
        }
        return try await exchange(request, content: content, receiving: body, progress: progress, timeout: timeout)
    }

    /// Sends `request`: a file as a stream (raced against `timeout` by `withTimeout`), a body in
    /// memory through the delegate API (timed by the shared timer).
    private func exchange(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving handling: HTTPResponseBodyHandling = .standard,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        let progress = progress ?? { _, _ in }
        let authority = request.authority
        let (url, headers) = try Self.target(of: request)
        let client = try clients.client(
            scheme: request.scheme, authority: authority, decompresses: handling.decompresses)
        let receiving = Receiving(
            limit: handling.maximumSize.map { min($0, maximumBodySize) } ?? maximumBodySize, sink: handling.sink)
        switch content {
        case .file(let file):
            var outgoing = HTTPClientRequest(url: url)
            outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
            outgoing.headers = headers
            outgoing.body = try Self.fileBody(file, authority: authority)
            guard let timeout else {
                return try await streamed(
                    outgoing, client: client, authority: authority, receiving: receiving, progress: progress)
            }
            return try await withTimeout(timeout) { [outgoing] in
                try await self.streamed(
                    outgoing, client: client, authority: authority, receiving: receiving, progress: progress)
            }
        case .data, nil:
            let body: HTTPClient.Body? =
                if case .data(let data) = content { .byteBuffer(ByteBuffer(bytes: data)) } else { nil }
            return try await collected(
                url: url, request.method, headers, body: body, client: client, authority: authority,
                receiving: receiving, timeout: timeout, progress: progress)
        }
    }

    /// Where a response's body goes: its limit in memory, or a sink.
    private struct Receiving: Sendable {
        var limit: Int
        var sink: (any HTTPResponseBodySink)?
    }

    /// Sends a request whose body is in memory through AsyncHTTPClient's delegate API, which
    /// completes one future per request: the cheapest way through the client (no deadline timer
    /// on the event loop, no async body stream). With a `timeout`, the process's shared timer
    /// fails the request with `TimeoutError` at the deadline.
    private func collected(
        url: String, _ method: HTTPRequest.Method, _ headers: HTTPHeaders, body: HTTPClient.Body?,
        client: HTTPClient, authority: String?, receiving: Receiving, timeout: Duration?,
        progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        try await Self.mappingErrors(authority: authority, limit: receiving.limit) {
            let outgoing = try HTTPClient.Request(
                url: url, method: HTTPMethod(rawValue: method.rawValue), headers: headers, body: body)
            let collector = ResponseCollector(
                maximumBodySize: receiving.limit, authority: authority, sink: receiving.sink, progress: progress)
            let task = client.execute(request: outgoing, delegate: collector, eventLoop: .indifferent, logger: nil)
            // A response already there when the timer fires is kept: failing a finished task
            // changes nothing.
            let deadline = timeout.map { timeout in
                SharedTimer.schedule(at: .now.advanced(by: timeout)) {
                    task.fail(reason: TimeoutError(timeout: timeout))
                }
            }
            defer { if let deadline { SharedTimer.cancel(deadline) } }
            let response: CollectedResponse
            do {
                response = try await withTaskCancellationHandler {
                    try await task.futureResult.get()
                } onCancel: {
                    task.cancel()
                }
            } catch {
                // What the collector failed the request with, rather than what followed from it.
                if let failure = collector.failure { throw failure }
                throw error
            }
            // The same response, read under the collector's lock (see `ResponseCollector.collected`).
            let collected = collector.collected ?? response
            return (Self.httpResponse(status: collected.head.status, headers: collected.head.headers), collected.body)
        }
    }

    /// Sends a request whose body is streamed from a file through AsyncHTTPClient's async API.
    private func streamed(
        _ outgoing: HTTPClientRequest, client: HTTPClient, authority: String?, receiving: Receiving,
        progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        try await Self.mappingErrors(authority: authority, limit: receiving.limit) {
            let response = try await client.execute(outgoing, timeout: .hours(1))
            var body = ResponseBody(limit: receiving.limit, authority: authority, sink: receiving.sink)
            body.expect(response.headers)
            try body.begin()
            for try await part in response.body {
                try body.append(part)
                progress(body.received, body.expected)
            }
            if body.received == 0 { progress(0, body.expected) }
            return (Self.httpResponse(status: response.status, headers: response.headers), body.data)
        }
    }

    /// Runs `body`, turning the client's errors into `CancellationError` (the task was cancelled)
    /// or an `HTTPTransportError` naming `authority`; one of ours (or the `TimeoutError` of a
    /// request whose time ran out) passes as it is.
    private static func mappingErrors<T>(
        authority: String?, limit: Int, _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch let error as HTTPTransportError {
            throw error
        } catch let failure as HTTPResponseSinkFailure {
            throw failure.error
        } catch {
            try Task.checkCancellation()
            if error is TimeoutError { throw error }
            throw mapped(error, authority: authority, limit: limit)
        }
    }

    /// A body that reads the file at `url` as the client sends it, with its length known.
    ///
    /// - Throws: `HTTPTransportError` (`.invalidRequest`) if the file cannot be read.
    static func fileBody(_ url: URL, authority: String?) throws -> HTTPClientRequest.Body {
        let size: Int
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        } catch {
            throw HTTPTransportError(
                code: .invalidRequest, message: "cannot read the body file \(url.path): \(error.localizedDescription)",
                host: authority)
        }
        return .stream(FileChunks(url: url), length: .known(Int64(size)))
    }

    /// The URL and headers AsyncHTTPClient sends for `request`.
    ///
    /// - Throws: `HTTPTransportError` (`.invalidRequest`) for a request with
    ///   no scheme or authority, or a header value whose bytes are not UTF-8 (the client
    ///   takes values as strings).
    static func target(of request: HTTPRequest) throws -> (url: String, headers: HTTPHeaders) {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw HTTPTransportError(
                code: .invalidRequest,
                message: "request \(request.method) \(request.path ?? "") has no scheme or authority",
                host: request.authority
            )
        }
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count)
        for field in request.headerFields {
            guard let value = field.utf8Value else {
                throw HTTPTransportError.unsendableHeader(field.name, client: "AsyncHTTPClient", authority: authority)
            }
            headers.add(name: field.name.rawName, value: value)
        }
        return ("\(scheme)://\(authority)\(request.path ?? "/")", headers)
    }

    static func httpResponse(status: HTTPResponseStatus, headers: HTTPHeaders) -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for header in headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        return HTTPResponse(
            status: HTTPResponse.Status(code: Int(status.code), reasonPhrase: status.reasonPhrase), headerFields: fields
        )
    }
}

/// A file's bytes as buffers of at most 64 KiB, read as they are asked for.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let url: URL

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        var handle: FileHandle?
        var finished = false

        mutating func next() async throws -> ByteBuffer? {
            guard !finished else { return nil }
            if handle == nil { handle = try FileHandle(forReadingFrom: url) }
            guard let data = try handle?.read(upToCount: 64 << 10), !data.isEmpty else {
                finished = true
                try? handle?.close()
                return nil
            }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(url: url)
    }
}
