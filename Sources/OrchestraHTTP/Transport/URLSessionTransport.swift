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
    /// A second session, with a delegate, for requests whose progress is wanted.
    private let streamingSession: URLSession
    private let streaming = URLSessionProgressDelegate()
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
        self.streamingSession = URLSession(configuration: configuration, delegate: streaming, delegateQueue: nil)
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
    }

    deinit {
        session.invalidateAndCancel()
        streamingSession.invalidateAndCancel()
    }

    /// Streams the body through a session delegate, calling `progress` as bytes arrive.
    public func send(
        _ request: HTTPRequest, body: Data?, progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) async throws -> (HTTPResponse, Data) {
        try await exchange(request, body: body) { urlRequest in
            let box = TaskBox(streamingSession.dataTask(with: urlRequest))
            let (response, data) = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>) in
                    streaming.register(box.task, .init(continuation: continuation, progress: progress))
                    box.task.resume()
                }
            } onCancel: {
                box.task.cancel()
            }
            return (response as URLResponse, data)
        }
    }

    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await exchange(request, body: body) { urlRequest in
            let (data, response) = try await session.data(for: urlRequest)
            return (response, data)
        }
    }

    /// The conversions and error mapping around one exchange: the request to a `URLRequest`,
    /// the response to an `HTTPResponse`, `URLError.cancelled` to `CancellationError`.
    private func exchange(
        _ request: HTTPRequest, body: Data?, _ perform: (URLRequest) async throws -> (URLResponse, Data)
    ) async throws -> (HTTPResponse, Data) {
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw HTTPTransportError("request \(request.method) \(request.scheme ?? "?")://\(request.authority ?? "?")\(request.path ?? "") has no valid URL")
        }
        urlRequest.httpBody = body
        do {
            let (response, data) = try await perform(urlRequest)
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

/// A data task carried into the cancellation handler (URLSessionTask is thread-safe but not
/// declared Sendable on Linux).
private struct TaskBox: @unchecked Sendable {
    let task: URLSessionDataTask
    init(_ task: URLSessionDataTask) { self.task = task }
}
