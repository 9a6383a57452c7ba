import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a ``URLSessionTransport`` knows of its requests and their data tasks: a pure state
/// machine, kept behind ``URLSessionExchangeDelegate``'s lock. Each event returns what to do
/// once the lock is released (resume a request, cancel or stop a task, call `progress`).
///
/// The rules it keeps, and why:
/// - A request's continuation is resumed once, by its task's completion, or earlier past the
///   body limit or at an authentication challenge; never by the cancellation handler itself.
/// - A task is known (``prepare(_:)``) before its request can be cancelled, so that a
///   cancellation or a completion that comes before the request waits (``start(_:_:)``) is kept
///   for it, not lost: with nothing kept, the completion found no request and the request
///   waited forever.
/// - A task is cancelled at most once by the transport, and only after it was resumed: a
///   task cancelled before URLSession had registered it, or while it completed on its own,
///   made Linux's URLSession look for it in its registry after it had left it, and crash.
struct URLSessionExchanges {
    /// A request waiting for its task.
    struct Exchange {
        var continuation: CheckedContinuation<URLSessionReply, any Error>
        var progress: (@Sendable (Int, Int?) -> Void)?
        /// The most body bytes accepted, decoded.
        var limit: Int
        /// The request's authority, for the message past the limit.
        var authority: String?
        var response: HTTPURLResponse?
        var data = Data()
        /// Where the body goes instead of ``data``.
        var sink: (any HTTPResponseBodySink)?
        /// Body bytes handed to the sink so far.
        var handed = 0

        init(
            continuation: CheckedContinuation<URLSessionReply, any Error>, progress: (@Sendable (Int, Int?) -> Void)?,
            limit: Int, authority: String?, sink: (any HTTPResponseBodySink)? = nil
        ) {
            self.continuation = continuation
            self.progress = progress
            self.limit = limit
            self.authority = authority
            self.sink = sink
        }
    }

    /// A continuation and what to resume it with.
    struct Resumption {
        var continuation: CheckedContinuation<URLSessionReply, any Error>
        var result: Result<URLSessionReply, any Error>
    }

    /// A task prepared whose request does not wait for it yet.
    private enum NotStarted {
        case waiting(cancelled: Bool)
        case completed(Result<URLSessionReply, any Error>)
    }

    /// What ``start(_:_:)`` asks for.
    enum Start {
        /// Resume the task.
        case resume
        /// Resume the task, then cancel it: the request was cancelled before it waited.
        case resumeAndCancel
        /// The task completed already: resume nothing, and hand the request its outcome.
        case deliver(Resumption)
    }

    /// What a part of the body asks for.
    enum Received {
        case nothing
        /// Call the request's `progress`.
        case progress(@Sendable (Int, Int?) -> Void, received: Int, expected: Int?)
        /// Past the limit: fail the request, stop receiving and cancel the task.
        case tooLarge(Resumption)
        /// The request ended already: stop receiving (its task's cancellation is on its way).
        case ended
        /// Hand the part to the request's sink (then call `progress`, if any).
        case write(
            any HTTPResponseBodySink, progress: (@Sendable (Int, Int?) -> Void)?, received: Int, expected: Int?)
    }

    private var notStarted: [Int: NotStarted] = [:]
    /// The requests under way, by task identifier.
    private var exchanges: [Int: Exchange] = [:]
    /// Tasks resumed whose completion has not come yet.
    private(set) var transfers: Set<Int> = []
    /// Body bytes delivered for requests that had already ended (past the limit, cancelled,
    /// answered at a challenge): how long a transfer went on after its request ended.
    private(set) var bytesAfterTheEnd = 0

    /// The task `id` exists; its request may be cancelled from now on.
    mutating func prepare(_ id: Int) {
        notStarted[id] = .waiting(cancelled: false)
    }

    /// The request of task `id` waits for it, with `exchange`.
    mutating func start(_ id: Int, _ exchange: Exchange) -> Start {
        switch notStarted.removeValue(forKey: id) {
        case .completed(let result):
            return .deliver(Resumption(continuation: exchange.continuation, result: result))
        case .waiting(let cancelled):
            exchanges[id] = exchange
            transfers.insert(id)
            return cancelled ? .resumeAndCancel : .resume
        case nil:
            preconditionFailure("URLSessionExchanges: task \(id) started without being prepared")
        }
    }

    /// The request of task `id` is cancelled: returns whether to cancel the task now. A task
    /// not resumed yet is cancelled by ``start(_:_:)`` once resumed; a request that ended is
    /// left as it is.
    mutating func cancel(_ id: Int) -> Bool {
        if case .waiting = notStarted[id] {
            notStarted[id] = .waiting(cancelled: true)
            return false
        }
        return exchanges[id] != nil
    }

    /// Task `id` received its response; returns the request's sink, to be told a body starts.
    @discardableResult
    mutating func receive(_ response: HTTPURLResponse?, for id: Int) -> (any HTTPResponseBodySink)? {
        exchanges[id]?.response = response
        exchanges[id]?.handed = 0
        return exchanges[id]?.sink
    }

    /// The sink of task `id`'s request threw `error`: the request fails with it (its task is
    /// to be cancelled).
    mutating func fail(_ id: Int, error: any Error) -> Resumption? {
        guard let exchange = exchanges.removeValue(forKey: id) else { return nil }
        return Resumption(continuation: exchange.continuation, result: .failure(HTTPResponseSinkFailure(error)))
    }

    /// Task `id` received a part of its body.
    mutating func receive(_ data: Data, for id: Int) -> Received {
        // No copy of the exchange may live across the append: its body would then have two
        // owners, and every part would copy the whole body received so far (quadratic).
        guard let received = exchanges[id]?.data.count, let limit = exchanges[id]?.limit else {
            bytesAfterTheEnd = bytesAfterTheEnd > Int.max - data.count ? Int.max : bytesAfterTheEnd + data.count
            return .ended
        }
        if let sink = exchanges[id]!.sink {
            exchanges[id]!.handed += data.count
            let expected = exchanges[id]!.response.map(\.expectedContentLength).flatMap { $0 >= 0 ? Int($0) : nil }
            return .write(sink, progress: exchanges[id]!.progress, received: exchanges[id]!.handed, expected: expected)
        }
        guard data.count <= limit - received else {
            let exchange = exchanges.removeValue(forKey: id)!
            let error = Self.tooLarge(exchange, limit: exchange.limit)
            return .tooLarge(Resumption(continuation: exchange.continuation, result: .failure(error)))
        }
        exchanges[id]!.data.append(data)
        guard let progress = exchanges[id]!.progress else { return .nothing }
        let expected = exchanges[id]!.response.map(\.expectedContentLength).flatMap { $0 >= 0 ? Int($0) : nil }
        return .progress(progress, received: received + data.count, expected: expected)
    }

    /// Task `id` met an authentication challenge, which the transport does not answer: the
    /// request ends with the challenge's response and the body received.
    mutating func challenge(for id: Int, failureResponse: HTTPURLResponse?) -> Resumption? {
        guard let exchange = exchanges.removeValue(forKey: id) else { return nil }
        guard let response = failureResponse ?? exchange.response else {
            return Resumption(continuation: exchange.continuation, result: .failure(URLError(.badServerResponse)))
        }
        return Resumption(
            continuation: exchange.continuation,
            result: .success(URLSessionReply(response: response, body: exchange.data)))
    }

    /// Task `id` completed: its request, if still waiting, gets the outcome; a request that
    /// does not wait yet gets it when it starts. `redirectBody`: the transfer was ended because
    /// the body of its 301–308 response (of `status`) passed `limit` (on Linux, see
    /// `RedirectBodyLimit`): the request fails as past its body limit. `notSetUp`: the task was
    /// cancelled before it started because its transfer could not be given the transport's
    /// settings (on Linux): the request fails saying so.
    mutating func complete(
        _ id: Int, error: (any Error)?, redirectBody: (status: Int, limit: Int)? = nil, notSetUp: Bool = false
    ) -> Resumption? {
        transfers.remove(id)
        if case .waiting = notStarted[id] {
            notStarted[id] = .completed(.failure(error ?? URLError(.badServerResponse)))
            return nil
        }
        guard let exchange = exchanges.removeValue(forKey: id) else { return nil }
        let result: Result<URLSessionReply, any Error>
        if let redirectBody {
            result = .failure(
                Self.tooLarge(
                    exchange, limit: redirectBody.limit,
                    note: " (a \(redirectBody.status) response, whose body URLSession on Linux holds whole)"))
        } else if notSetUp {
            result = .failure(
                HTTPTransportError(
                    code: .invalidRequest,
                    message: "the request to \(exchange.authority ?? "the server") was not sent: this Foundation's "
                        + "URLSession does not let the transport apply its TLS and proxy settings "
                        + "(use --transport asynchttpclient)",
                    host: exchange.authority))
        } else if let error {
            result = .failure(error)
        } else if let response = exchange.response {
            result = .success(URLSessionReply(response: response, body: exchange.data))
        } else {
            result = .failure(URLError(.badServerResponse))
        }
        return Resumption(continuation: exchange.continuation, result: result)
    }

    /// The error of a response whose body passed `limit`.
    private static func tooLarge(_ exchange: Exchange, limit: Int, note: String = "") -> HTTPTransportError {
        HTTPTransportError(
            code: .responseTooLarge,
            message: "the response from \(exchange.authority ?? "the server") is larger than \(limit) bytes\(note)",
            host: exchange.authority)
    }
}

/// A response and its whole body, as a data task delivers them (HTTPURLResponse is not
/// declared Sendable on Linux; the reply is handed over once, never shared).
struct URLSessionReply: @unchecked Sendable {
    let response: HTTPURLResponse
    let body: Data
}
