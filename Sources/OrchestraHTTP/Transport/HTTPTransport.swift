import Foundation
public import HTTPTypes

/// Sends one HTTP request and returns the response with its whole body: what an
/// ``HTTPCoordinator`` needs from an HTTP client.
///
/// Conform a client to it to coordinate requests through it: ``URLSessionTransport`` is the
/// default; a SwiftNIO one (`AsyncHTTPClientTransport`) is planned as its own product, so app
/// targets never pull in SwiftNIO.
///
/// Requirements:
/// - **Cancellation:** when the calling task is cancelled, end the request and throw
///   `CancellationError` (not a client-specific "cancelled" error).
/// - **No hidden limits:** allow at least ``maximumConnectionsPerHost`` connections per host,
///   so that the coordinator, not the client, is what limits concurrency.
/// - **No hidden timeouts:** the coordinator times requests itself; a client's own timeout
///   should be long (URLSession's default is 60 s).
public protocol HTTPTransport: Sendable {
    /// Sends `request` with `body` and returns the response and its body.
    ///
    /// - Throws: `CancellationError` if the task is cancelled; the client's error if the
    ///   request could not be made (connection refused, DNS, TLS…). A response with any status
    ///   is returned, not thrown.
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)

    /// Sends `request` like ``send(_:body:)`` and reports the response body's progress:
    /// bytes received so far, and bytes expected (from `Content-Length`) when known. A
    /// transport that streams calls `progress` as bytes arrive; the default implementation
    /// reports once, when the whole body is there.
    func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data)

    /// The most connections the transport opens to one host.
    var maximumConnectionsPerHost: Int { get }
}

extension HTTPTransport {
    public func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await send(request, body: body)
        progress(data.count, data.count)
        return (response, data)
    }
}

/// A transport could not turn a request into something it can send.
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
