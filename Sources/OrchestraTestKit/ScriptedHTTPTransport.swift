import Foundation
public import HTTPTypes
import Orchestra
public import OrchestraHTTP

/// An `HTTPTransport` (OrchestraHTTP) that answers from a closure, in memory: for testing
/// code that uses an `HTTPCoordinator` without a network.
///
/// It records every request in arrival order and counts the requests in flight (overall and
/// per host, with their peaks), so a test can check limits, order and retries:
///
/// ```swift
/// let transport = ScriptedHTTPTransport { request, _ in
///     (HTTPResponse(status: .ok), Data("hello".utf8))
/// }
/// let api = HTTPCoordinator(transport: transport, configuration: .init(maxConcurrentRequests: 2))
/// _ = try await api.data(for: HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/"))
/// #expect(transport.peakInFlight <= 2)
/// ```
///
/// Cancellation: the handler runs in the sending task; a handler that waits should wait
/// cancellably, as a real transport does.
public final class ScriptedHTTPTransport: HTTPTransport {
    /// Answers one request: the response and body to return, or an error to throw (a transport failure).
    public typealias Handler = @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)

    private struct State {
        var requests: [HTTPRequest] = []
        var inFlight = 0
        var peak = 0
        var inFlightByHost: [String: Int] = [:]
        var peakByHost: [String: Int] = [:]
    }

    private let handler: Handler
    private let state = Locked(State())
    /// What the transport reports as its connection limit (1,000 by default: no limit in tests).
    public let maximumConnectionsPerHost: Int

    /// A transport that answers every request with `handler` and records it.
    public init(maximumConnectionsPerHost: Int = 1_000, handler: @escaping Handler) {
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.handler = handler
    }

    /// Records `request`, counts it in flight while `handler` answers, and returns the answer.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let host = request.authority ?? ""
        state.withLock { state in
            state.requests.append(request)
            state.inFlight += 1
            state.peak = max(state.peak, state.inFlight)
            state.inFlightByHost[host, default: 0] += 1
            state.peakByHost[host] = max(state.peakByHost[host, default: 0], state.inFlightByHost[host]!)
        }
        defer {
            state.withLock { state in
                state.inFlight -= 1
                state.inFlightByHost[host]! -= 1
            }
        }
        try Task.checkCancellation()
        return try await handler(request, body)
    }

    /// Every request received, in arrival order.
    public var requests: [HTTPRequest] { state.withLock { $0.requests } }
    /// Requests being answered now.
    public var inFlight: Int { state.withLock { $0.inFlight } }
    /// The most requests answered at once.
    public var peakInFlight: Int { state.withLock { $0.peak } }

    /// The most requests to `host` (its authority) answered at once.
    public func peakInFlight(host: String) -> Int {
        state.withLock { $0.peakByHost[host, default: 0] }
    }

    /// Requests to `host` being answered now.
    public func inFlight(host: String) -> Int {
        state.withLock { $0.inFlightByHost[host, default: 0] }
    }
}
