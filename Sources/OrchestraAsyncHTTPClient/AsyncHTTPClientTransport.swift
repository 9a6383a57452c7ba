public import AsyncHTTPClient
import Foundation
public import HTTPTypes
import NIOCore
import NIOHTTP1
public import OrchestraHTTP

/// An ``OrchestraHTTP/HTTPTransport`` over AsyncHTTPClient (SwiftNIO), for servers. In its own
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
/// The client it makes allows `maximumConnectionsPerHost` connections per host
/// (AsyncHTTPClient's default is 8), a 10 s connect timeout and an hour-long read timeout (the
/// coordinator's per-request timeout applies first). A cancelled task's request is cancelled
/// and ends with `CancellationError`. Bodies are collected in memory, up to `maximumBodySize`.
public final class AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient
    public let maximumConnectionsPerHost: Int
    private let maximumBodySize: Int

    /// A transport over `client`, which you shut down after the last request.
    public init(client: HTTPClient, maximumConnectionsPerHost: Int, maximumBodySize: Int = 64 << 20) {
        self.client = client
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.maximumBodySize = maximumBodySize
    }

    /// Runs `body` with a transport over a new client, then shuts the client down, however
    /// `body` ends.
    public static func withTransport<T: Sendable>(
        maximumConnectionsPerHost: Int = 64,
        maximumBodySize: Int = 64 << 20,
        _ body: (AsyncHTTPClientTransport) async throws -> T
    ) async throws -> T {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: maximumConnectionsPerHost)
        configuration.timeout = .init(connect: .seconds(10), read: .hours(1))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let transport = AsyncHTTPClientTransport(client: client, maximumConnectionsPerHost: maximumConnectionsPerHost, maximumBodySize: maximumBodySize)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(transport))
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        return try result.get()
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await send(request, body: body, progress: { _, _ in })
    }

    /// Streams the body, calling `progress` as each part arrives.
    public func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw HTTPTransportError("request \(request.method) \(request.path ?? "") has no scheme or authority")
        }
        var outgoing = HTTPClientRequest(url: "\(scheme)://\(authority)\(request.path ?? "/")")
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body {
            outgoing.body = .bytes(ByteBuffer(bytes: body))
        }
        do {
            let response = try await client.execute(outgoing, timeout: .hours(1))
            let expected = response.headers.first(name: "content-length").flatMap { Int($0) }
            var data = Data()
            if let expected, expected <= maximumBodySize { data.reserveCapacity(expected) }
            for try await part in response.body {
                guard data.count + part.readableBytes <= maximumBodySize else {
                    throw HTTPTransportError("the response body is larger than \(maximumBodySize) bytes")
                }
                data.append(contentsOf: part.readableBytesView)
                progress(data.count, expected)
            }
            var fields = HTTPFields()
            for header in response.headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            let status = HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
            return (HTTPResponse(status: status, headerFields: fields), data)
        } catch {
            try Task.checkCancellation()
            throw error
        }
    }
}
