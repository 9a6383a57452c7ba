import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Orchestra
import OrchestraHTTP

/// A response as ``ResponseCollector`` hands it over: the head and the whole body.
struct CollectedResponse: Sendable {
    var head: HTTPResponseHead
    var body: Data
}

/// Collects a response in memory for AsyncHTTPClient's delegate API: the head, then the body
/// up to `maximumBodySize` bytes, calling `progress` as each part arrives.
///
/// The delegate API completes one future per request, on the event loop that read it: no
/// deadline timer to schedule and cancel on another thread, no actor, no async body stream
/// to step through part by part (each part a task switch). AsyncHTTPClient calls a delegate
/// one method at a time; the lock only makes that visible to the compiler.
final class ResponseCollector: HTTPClientResponseDelegate {
    typealias Response = CollectedResponse

    private struct State {
        var head: HTTPResponseHead?
        var body: ResponseBody
    }

    private let state: Locked<State>
    private let progress: @Sendable (_ received: Int, _ expected: Int?) -> Void

    init(
        maximumBodySize: Int, authority: String?,
        progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) {
        state = Locked(State(body: ResponseBody(limit: maximumBodySize, authority: authority)))
        self.progress = progress
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLock { state in
            state.head = head
            state.body.expect(head.headers)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ part: ByteBuffer) -> EventLoopFuture<Void> {
        let received = state.withLock { state in
            Result { () throws(HTTPTransportError) in
                try state.body.append(part)
                return (count: state.body.data.count, expected: state.body.expected)
            }
        }
        switch received {
        case .success(let received):
            progress(received.count, received.expected)
            return task.eventLoop.makeSucceededVoidFuture()
        case .failure(let error):
            return task.eventLoop.makeFailedFuture(error)
        }
    }

    func didReceiveError(task: HTTPClient.Task<Response>, _ error: any Error) {}

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        let (head, body) = state.withLock { ($0.head, $0.body) }
        // AsyncHTTPClient reports the head before it finishes a request.
        guard let head else { preconditionFailure("AsyncHTTPClient finished a request before its head") }
        if body.data.isEmpty { progress(0, body.expected) }
        return CollectedResponse(head: head, body: body.data)
    }
}

/// A response body gathered in memory, refused past `limit` bytes.
struct ResponseBody: Sendable {
    let limit: Int
    let authority: String?
    private(set) var data = Data()
    /// The length the server announced (`Content-Length`).
    private(set) var expected: Int?

    init(limit: Int, authority: String?) {
        self.limit = limit
        self.authority = authority
    }

    /// Notes the announced length and makes room for it (if it is within the limit).
    mutating func expect(_ headers: HTTPHeaders) {
        expected = headers.first(name: "content-length").flatMap { Int($0) }
        if let expected, expected <= limit { data.reserveCapacity(expected) }
    }

    /// Adds `part`.
    ///
    /// - Throws: `HTTPTransportError` (`.responseTooLarge`) if the body would pass the limit.
    mutating func append(_ part: ByteBuffer) throws(HTTPTransportError) {
        guard data.count + part.readableBytes <= limit else {
            throw HTTPTransportError(
                code: .responseTooLarge,
                message: "the response from \(authority ?? "the server") is larger than \(limit) bytes",
                host: authority
            )
        }
        data.append(contentsOf: part.readableBytesView)
    }
}
