import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

/// One request as it went over the wire and what came back: each attempt, each redirect hop,
/// each login and refresh is one exchange. What `orchestra run --verbose` prints.
package struct HTTPExchange: Sendable {
    /// Who sent it: a step's id (`login`), an element's (`image[3]`), or `auth` for the auth
    /// block's login and refresh.
    package var label: String
    /// The request as sent: after signing with a token or basic credentials, with the hop's URL.
    package var request: HTTPRequest
    /// Bytes, or a file (`body_file:`) that was streamed.
    package var body: HTTPRequestBody?
    /// The response, or `nil` when the transport failed (``error``).
    package var response: HTTPResponse?
    package var responseBody: Data?
    /// Why no response came, as the transport said.
    package var error: String?
    /// From sending to the response (or the failure).
    package var duration: Duration

    package init(
        label: String, request: HTTPRequest, body: HTTPRequestBody? = nil, response: HTTPResponse? = nil,
        responseBody: Data? = nil, error: String? = nil, duration: Duration
    ) {
        self.label = label
        self.request = request
        self.body = body
        self.response = response
        self.responseBody = responseBody
        self.error = error
        self.duration = duration
    }
}

/// Who is sending, set by the step executor around its request: the label of its exchanges
/// and the cookie jar its requests use.
struct ExchangeContext: Sendable {
    @TaskLocal static var current: ExchangeContext?

    /// The step's id, or an element's (`image[3]`).
    var label: String
    /// `nil` when the step does not use cookies.
    var cookies: CookieJar?
}

/// A transport that adds something around another one (`base`): it implements only
/// ``exchange(_:content:progress:timeout:)``, and every way of sending goes through it.
protocol WrappingTransport: HTTPTransport {
    var base: any HTTPTransport { get }

    /// Sends `request` through `base` (with `base.send(_:content:receiving:progress:timeout:)`,
    /// so that a timeout and the body's handling reach it), adding what the wrapper adds.
    func exchange(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data)
}

extension HTTPTransport {
    /// Sends through the plainest method that carries `body` and `timeout`.
    func forward(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        if body.isStandard { return try await send(request, content: content, progress: progress, within: timeout) }
        return try await send(request, content: content, receiving: body, progress: progress, timeout: timeout)
    }
}

extension WrappingTransport {
    var maximumConnectionsPerHost: Int { base.maximumConnectionsPerHost }

    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, content: content, receiving: .standard, progress: progress, timeout: nil)
    }

    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, content: content, receiving: .standard, progress: progress, timeout: timeout)
    }

    func send(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, content: content, receiving: body, progress: progress, timeout: timeout)
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await send(request, content: body.map(HTTPRequestBody.data), progress: nil)
    }

    func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        try await send(request, content: body.map(HTTPRequestBody.data), progress: progress)
    }
}

/// Sends the cookies of the sending step's jar (``ExchangeContext``) with each request, and
/// stores the cookies each response sets. Below the coordinator, so every redirect hop gets
/// the cookies of its own host and path, and a cookie set by a 302 is sent to its location.
/// A request that already has a `Cookie` header (given by the step) is sent as it is.
struct CookieTransport: WrappingTransport {
    let base: any HTTPTransport

    func exchange(
        _ request: HTTPRequest, content body: HTTPRequestBody?, receiving handling: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        guard let jar = ExchangeContext.current?.cookies else {
            return try await base.forward(
                request, content: body, receiving: handling, progress: progress, timeout: timeout)
        }
        let scheme = request.scheme ?? "http"
        let host = request.authority ?? ""
        let path = request.path ?? "/"
        var request = request
        if request.headerFields[.cookie] == nil, let cookies = jar.header(scheme: scheme, host: host, path: path) {
            // One field: HTTPFields' subscript splits a Cookie value into a field per cookie,
            // which HTTP/1.1 forbids (RFC 6265 §5.4) and servers join with commas.
            request.headerFields.append(HTTPField(name: .cookie, value: cookies))
        }
        let (response, data) = try await base.forward(
            request, content: body, receiving: handling, progress: progress, timeout: timeout)
        let set = response.headerFields[values: .setCookie]
        if !set.isEmpty { jar.store(setCookie: set, scheme: scheme, host: host, path: path) }
        return (response, data)
    }
}

/// A transport that reports every exchange to `observe` as it ends, and otherwise passes
/// everything to `base`.
struct ObservedTransport<C: Clock>: WrappingTransport where C.Duration == Duration {
    let base: any HTTPTransport
    let clock: C
    /// The label of every exchange, instead of ``ExchangeContext/current``.
    let label: String?
    let observe: @Sendable (HTTPExchange) -> Void

    func exchange(
        _ request: HTTPRequest, content body: HTTPRequestBody?, receiving handling: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        let start = clock.now
        var exchange = HTTPExchange(
            label: label ?? ExchangeContext.current?.label ?? "request", request: request, body: body, duration: .zero)
        do {
            let (response, data) = try await base.forward(
                request, content: body, receiving: handling, progress: progress, timeout: timeout)
            exchange.duration = start.duration(to: clock.now)
            exchange.response = response
            exchange.responseBody = data
            observe(exchange)
            return (response, data)
        } catch {
            exchange.duration = start.duration(to: clock.now)
            exchange.error = error is CancellationError ? "cancelled" : "\(error)"
            observe(exchange)
            throw error
        }
    }
}

/// A transport whose requests keep to an `HTTPCoordinator`'s rates (its host's permit and the
/// overall one, and the pauses the servers ask for) without taking one of its slots: for the
/// auth block's logins and refreshes, which go around the coordinator. Until
/// ``pace(with:)`` is called it only passes requests on.
final class PacedTransport: WrappingTransport {
    let base: any HTTPTransport
    private let coordinator = Locked<HTTPCoordinator?>(nil)

    init(base: any HTTPTransport) {
        self.base = base
    }

    /// Takes permits from `coordinator` from now on.
    func pace(with coordinator: HTTPCoordinator) {
        self.coordinator.withLock { $0 = coordinator }
    }

    func exchange(
        _ request: HTTPRequest, content body: HTTPRequestBody?, receiving handling: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        let pacer = coordinator.withLock { $0 }
        try await pacer?.waitForRate(of: request)
        let (response, data) = try await base.forward(
            request, content: body, receiving: handling, progress: progress, timeout: timeout)
        pacer?.observeRate(response, of: request)
        return (response, data)
    }
}
