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
        /// Why the collector failed the request (past the limit, the sink's error): what the
        /// request ends with, whatever error the client reports after it (a decoder cut off
        /// mid-stream reports a truncated body).
        var failure: (any Error)?
    }

    /// Why the collector failed the request, if it did.
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// The response as collected, read under the collector's lock, once the request's future
    /// has completed. Take it from here, not from the future: the future completes on the event
    /// loop and resumes the waiting task through the Swift runtime, which ThreadSanitizer does
    /// not see as synchronisation (it reported the task's read of the head the event loop had
    /// written as a race, failing a sanitized `orchestra worker`); the lock it does see.
    var collected: CollectedResponse? {
        state.withLock { state in state.head.map { CollectedResponse(head: $0, body: state.body.data) } }
    }

    private let state: Locked<State>
    private let progress: @Sendable (_ received: Int, _ expected: Int?) -> Void

    init(
        maximumBodySize: Int, authority: String?, sink: (any HTTPResponseBodySink)? = nil,
        progress: @escaping @Sendable (_ received: Int, _ expected: Int?) -> Void
    ) {
        state = Locked(State(body: ResponseBody(limit: maximumBodySize, authority: authority, sink: sink)))
        self.progress = progress
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let began = state.withLock { state in
            state.head = head
            state.body.expect(head.headers)
            let result = Result { try state.body.begin() }
            if case .failure(let error) = result, state.failure == nil { state.failure = error }
            return result
        }
        if case .failure(let error) = began { return task.eventLoop.makeFailedFuture(error) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ part: ByteBuffer) -> EventLoopFuture<Void> {
        let received = state.withLock { state in
            let result = Result { () throws in
                try state.body.append(part)
                return (count: state.body.received, expected: state.body.expected)
            }
            if case .failure(let error) = result, state.failure == nil { state.failure = error }
            return result
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
        if body.received == 0 { progress(0, body.expected) }
        return CollectedResponse(head: head, body: body.data)
    }
}

/// A response body gathered in memory, refused past `limit` bytes (counted decoded), or handed
/// to a sink part by part and never held.
struct ResponseBody: Sendable {
    let limit: Int
    let authority: String?
    let sink: (any HTTPResponseBodySink)?
    private(set) var data = Data()
    /// The bytes received so far (decoded).
    private(set) var received = 0
    /// The length the server announced (`Content-Length`).
    private(set) var expected: Int?
    /// Whether the server encoded the body (`Content-Encoding`): the limit then counts decoded bytes.
    private var encoded = false

    init(limit: Int, authority: String?, sink: (any HTTPResponseBodySink)? = nil) {
        self.limit = limit
        self.authority = authority
        self.sink = sink
    }

    /// Notes the announced length and makes room for it (if it is within the limit).
    mutating func expect(_ headers: HTTPHeaders) {
        expected = headers.first(name: "content-length").flatMap { Int($0) }
        encoded = headers.first(name: "content-encoding").map { $0.lowercased() != "identity" } ?? false
        if sink == nil, let expected, expected <= limit { data.reserveCapacity(expected) }
    }

    /// Tells the sink a body starts.
    ///
    /// - Throws: ``HTTPResponseSinkFailure`` with what the sink threw.
    func begin() throws {
        do { try sink?.begin() } catch { throw HTTPResponseSinkFailure(error) }
    }

    /// Adds `part`, or hands it to the sink.
    ///
    /// - Throws: `HTTPTransportError` (`.responseTooLarge`) if a body held in memory would pass
    ///   the limit; ``HTTPResponseSinkFailure`` with what the sink threw.
    mutating func append(_ part: ByteBuffer) throws {
        if let sink {
            do {
                try part.withUnsafeReadableBytes { try sink.write($0) }
            } catch {
                throw HTTPResponseSinkFailure(error)
            }
            received += part.readableBytes
            return
        }
        guard data.count + part.readableBytes <= limit else {
            throw HTTPTransportError(
                code: .responseTooLarge,
                message:
                    "the response from \(authority ?? "the server") is larger than \(limit) bytes\(encoded ? " (decoded)" : "")",
                host: authority
            )
        }
        data.append(contentsOf: part.readableBytesView)
        received = data.count
    }
}
