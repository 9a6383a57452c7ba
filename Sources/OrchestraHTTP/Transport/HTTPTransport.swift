import Foundation
public import HTTPTypes
import Orchestra

/// Sends one HTTP request and returns the response with its whole body: what an
/// ``HTTPCoordinator`` needs from an HTTP client.
///
/// Conform a client to it to coordinate requests through it: ``URLSessionTransport`` is the
/// default; `AsyncHTTPClientTransport` (SwiftNIO) ships in the `OrchestraAsyncHTTPClient`
/// product, so app targets never pull in SwiftNIO; `OrchestraTestKit` has
/// `ScriptedHTTPTransport`, in memory, and `HTTPTransportConformance`, the checks a transport
/// must pass. <doc:Implementing-a-Transport> explains each rule.
///
/// Requirements:
/// - **Every response as is:** return a response with any status, 3xx and 401 included, with
///   its headers and body. Never follow a redirect and never answer an authentication
///   challenge: the coordinator does both, by its own rules.
/// - **Cancellation:** when the calling task is cancelled, end the request and throw
///   `CancellationError` (not a client-specific "cancelled" error).
/// - **Errors in words:** when no response came back, throw an ``HTTPTransportError`` whose
///   code says why (``HTTPTransportError/isTransient`` decides retries).
/// - **No hidden limits:** allow at least ``maximumConnectionsPerHost`` connections per host,
///   so that the coordinator, not the client, is what limits concurrency.
/// - **No hidden timeouts:** the coordinator times requests itself; a client's own timeout
///   should be long (an hour for both transports here).
public protocol HTTPTransport: Sendable {
    /// Sends `request` with `body` and returns the response and its body.
    ///
    /// - Throws: `CancellationError` if the task is cancelled; ``HTTPTransportError`` if no
    ///   response came back (connection refused, DNS, TLS…). A response with any status is
    ///   returned, not thrown.
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)

    /// Sends `request` like ``send(_:body:)`` and reports the response body's progress:
    /// bytes received so far, and bytes expected (from `Content-Length`) when known. A
    /// transport that streams calls `progress` as bytes arrive; the default implementation
    /// reports once, when the whole body is there. `received` never decreases, and the last
    /// call, before the method returns, reports the whole body (an empty body as one call
    /// with 0). Call `progress` from any
    /// thread, never under a lock of your own: it is user code.
    ///
    /// Cancellation and errors: as ``send(_:body:)``.
    func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data)

    /// Sends `request` with `content`, a body in memory or a file, reporting progress as
    /// ``send(_:body:progress:)`` does when `progress` is given. The coordinator sends through
    /// this method. The default implementation reads a file whole (memory-mapped) and calls
    /// ``send(_:body:)`` or ``send(_:body:progress:)``; a transport that can stream a file
    /// implements it to send the file as it reads it.
    ///
    /// - Throws: As ``send(_:body:)``; the error reading a file.
    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?
    ) async throws -> (HTTPResponse, Data)

    /// Sends `request` like ``send(_:content:progress:)``, giving up once `timeout` has passed.
    ///
    /// The coordinator sends a request that has a timeout through this method when its clock
    /// is the real one (`ContinuousClock`; with another clock, a test's, it races the send
    /// against its own timer). The default implementation races ``send(_:content:progress:)``
    /// against `timeout` with `withTimeout(_:tolerance:clock:isolation:_:)`; a transport that
    /// hands the request to another process implements it to pass the time limit on, so the
    /// request is stopped there too.
    ///
    /// - Throws: `TimeoutError` with `timeout` when the time ran out first; otherwise as
    ///   ``send(_:content:progress:)``.
    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
    ) async throws -> (HTTPResponse, Data)

    /// Sends `request` with `content` and handles the response's body as `body` says: held in
    /// memory within a limit, handed to a ``HTTPResponseBodySink`` part by part as it arrives
    /// (returning an empty body), decoded or as sent. The coordinator sends a request whose
    /// ``HTTPRequestOptions/responseBody`` is not ``HTTPResponseBodyHandling/standard`` through
    /// this method, with its timeout (`nil`: none). The default implementation holds the
    /// whole body, then hands it to the sink, and refuses `decompresses: false`; a transport
    /// that streams implements it (both transports of this package do), and
    /// `HTTPTransportConformance` checks that a sink's body is never held whole.
    ///
    /// - Throws: As ``send(_:content:progress:timeout:)``; what the sink throws, as it is.
    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data)

    /// The most connections the transport opens to one host.
    var maximumConnectionsPerHost: Int { get }
}

extension HTTPTransport {
    /// Sends `request` with ``send(_:body:)`` and reports its progress once, when the whole
    /// body is there: the behaviour of a transport that does not stream.
    public func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await send(request, body: body)
        progress(data.count, data.count)
        return (response, data)
    }

    /// Reads `content` into memory and sends it with ``send(_:body:)`` (or
    /// ``send(_:body:progress:)`` when `progress` is given).
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?
    ) async throws -> (HTTPResponse, Data) {
        let body = try content?.contents()
        if let progress { return try await send(request, body: body, progress: progress) }
        return try await send(request, body: body)
    }

    /// ``send(_:content:progress:timeout:)`` when there is a `timeout`, else
    /// ``send(_:content:progress:)``.
    package func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, within timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        if let timeout { return try await send(request, content: content, progress: progress, timeout: timeout) }
        return try await send(request, content: content, progress: progress)
    }

    /// Races ``send(_:content:progress:)`` against `timeout` on `ContinuousClock`.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
    ) async throws -> (HTTPResponse, Data) {
        try await withTimeout(timeout) { try await self.send(request, content: content, progress: progress) }
    }
}
