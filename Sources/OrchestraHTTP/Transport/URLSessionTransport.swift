import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
public import HTTPTypes
import HTTPTypesFoundation

/// An ``HTTPTransport`` over `URLSession`, on Apple platforms and on Linux.
///
/// It makes its own session, configured so that it does not limit or time out what the
/// coordinator manages: `httpMaximumConnectionsPerHost` raised to `maximumConnectionsPerHost`
/// (Linux's URLSession defaults to 6 per host), request and resource timeouts of an hour (the
/// coordinator's per-request timeout applies first), no cache, no cookies.
/// `URLError.cancelled` becomes `CancellationError`.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    // @unchecked: URLSession is thread-safe but not declared Sendable on Linux; the session is
    // never mutated after init.
    private let session: URLSession
    public let maximumConnectionsPerHost: Int

    /// - Parameter maximumConnectionsPerHost: Connections per host the session may open; set
    ///   it at least as high as the coordinator's per-host limit (64 by default).
    public init(maximumConnectionsPerHost: Int = 64) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        configuration.timeoutIntervalForRequest = 3_600
        configuration.timeoutIntervalForResource = 3_600
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        self.session = URLSession(configuration: configuration)
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
    }

    deinit {
        session.invalidateAndCancel()
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw HTTPTransportError("request \(request.method) \(request.scheme ?? "?")://\(request.authority ?? "?")\(request.path ?? "") has no valid URL")
        }
        urlRequest.httpBody = body
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = (response as? HTTPURLResponse)?.httpResponse else {
                throw HTTPTransportError("\(urlRequest.url?.absoluteString ?? "request"): the response is not an HTTP response")
            }
            return (http, data)
        } catch let error as URLError where error.code == .cancelled {
            throw CancellationError()
        } catch {
            try Task.checkCancellation()
            throw error
        }
    }
}
