public import Foundation
public import HTTPTypes
public import OrchestraDurable
public import OrchestraHTTP

/// One HTTP exchange as a durable job: a ``DurableHTTPTransport`` appends one per request it
/// sends, and whichever worker claims it sends the request and stores the response (or why
/// none came back) as the job's output.
///
/// Register the handler on each worker's queue with
/// ``OrchestraDurable/DurableQueue/registerHTTPJobs(sendingThrough:whenSending:whenSent:)``:
///
/// ```swift
/// let queue = DurableQueue(store: store, worker: "worker-1")
/// queue.registerHTTPJobs(sendingThrough: URLSessionTransport())
/// try await queue.work(limit: 8, until: stop)
/// ```
public enum HTTPJob {
    /// The job kind the workers register.
    public static let kind = JobKind<Request, Outcome>("orchestra.http")

    /// The most bytes of request body a job carries to a worker: the body is stored in the
    /// job's row, as JSON. A larger body is refused before anything is stored.
    public static let maximumBodySize = 16 << 20

    /// A request as a job's input: everything a worker needs to send it.
    public struct Request: Codable, Sendable, Hashable {
        public var method: String
        public var scheme: String?
        public var authority: String?
        public var path: String?
        /// `[name, value]` pairs, in order.
        public var headers: [[String]]
        public var body: Data?

        /// The job input of `request` with `body`.
        public init(_ request: HTTPRequest, body: Data?) {
            method = request.method.rawValue
            scheme = request.scheme
            authority = request.authority
            path = request.path
            headers = request.headerFields.map { [$0.name.rawName, $0.value] }
            self.body = body
        }

        /// The request to send.
        ///
        /// - Throws: `HTTPTransportError` (`invalidRequest`) for a method or header name that
        ///   is not one (a job written by something else).
        public func httpRequest() throws -> HTTPRequest {
            guard let method = HTTPRequest.Method(method) else {
                throw HTTPTransportError(
                    code: .invalidRequest, message: "the job's method '\(method)' is not an HTTP method")
            }
            var fields = HTTPFields()
            for pair in headers {
                guard pair.count == 2, let name = HTTPField.Name(pair[0]) else {
                    throw HTTPTransportError(
                        code: .invalidRequest, message: "the job's header \(pair) is not a name and a value")
                }
                fields.append(HTTPField(name: name, value: pair[1]))
            }
            return HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
        }
    }

    /// What came back: a response, or the reason none did (a transport error, by code).
    public struct Outcome: Codable, Sendable {
        /// A response as stored: status, reason, `[name, value]` header pairs and body.
        public struct Response: Codable, Sendable {
            public var status: Int
            public var reason: String
            public var headers: [[String]]
            public var body: Data
        }

        /// A transport error as stored: its code's name, its message and host.
        public struct Failure: Codable, Sendable {
            public var code: String
            public var message: String
            public var host: String?
        }

        public var response: Response?
        public var failure: Failure?
        /// The worker that sent the request.
        public var worker: String

        /// The outcome of a request that got `response` with `body`, sent by `worker`.
        public init(response: HTTPResponse, body: Data, worker: String) {
            self.response = Response(
                status: response.status.code, reason: response.status.reasonPhrase,
                headers: response.headerFields.map { [$0.name.rawName, $0.value] }, body: body)
            self.worker = worker
        }

        /// The outcome of a request that got no response: `failure`, on `worker`.
        public init(failure: HTTPTransportError, worker: String) {
            self.failure = Failure(code: failure.code.description, message: failure.message, host: failure.host)
            self.worker = worker
        }

        /// The response, or the transport error, as the worker saw it.
        ///
        /// - Throws: `HTTPTransportError`: the worker's, or `other` when the outcome holds
        ///   neither a response nor an error.
        public func result() throws -> (HTTPResponse, Data) {
            if let failure {
                let code = HTTPJob.codes.first { $0.description == failure.code } ?? .other
                throw HTTPTransportError(code: code, message: failure.message, host: failure.host)
            }
            guard let response else {
                throw HTTPTransportError(
                    code: .other, message: "worker \(worker) stored neither a response nor an error")
            }
            var fields = HTTPFields()
            for pair in response.headers where pair.count == 2 {
                if let name = HTTPField.Name(pair[0]) { fields.append(HTTPField(name: name, value: pair[1])) }
            }
            let status = HTTPResponse.Status(code: response.status, reasonPhrase: response.reason)
            return (HTTPResponse(status: status, headerFields: fields), response.body)
        }
    }

    /// The transport error codes, to read one back by name.
    static let codes: [HTTPTransportError.Code] = [
        .connectionRefused, .hostNotFound, .timedOut, .connectionLost, .notConnected, .tls, .badResponse,
        .invalidRequest, .bodyNotAllowed, .responseTooLarge, .other,
    ]

    /// Sends the job's request through `transport` (on a worker): a response, or a transport
    /// error, becomes the outcome.
    ///
    /// Cancellation: cancels the request and throws `CancellationError` (the job is not
    /// recorded as done).
    ///
    /// - Throws: `CancellationError`; any error of `transport` other than an
    ///   `HTTPTransportError` (the job's attempt then fails).
    public static func send(
        _ request: Request, through transport: any HTTPTransport, worker: String
    ) async throws -> Outcome {
        do {
            let (response, body) = try await transport.send(try request.httpRequest(), body: request.body)
            return Outcome(response: response, body: body, worker: worker)
        } catch let error as HTTPTransportError {
            return Outcome(failure: error, worker: worker)
        }
    }
}

extension DurableQueue {
    /// Makes this queue's workers send the requests of ``HTTPJob``s through `transport`, the
    /// worker side of ``DurableHTTPTransport``.
    ///
    /// ```swift
    /// let queue = DurableQueue(store: store, worker: "worker-1", leaseDuration: .seconds(10))
    /// queue.registerHTTPJobs(sendingThrough: URLSessionTransport())
    /// try await queue.work(limit: 8, until: stop)
    /// ```
    ///
    /// A response of any status is the job's output, and so is a transport error (connection
    /// refused, a timeout): the producer decides what to do with it, as with a transport of its
    /// own. Cancellation of the worker's handler cancels the request.
    ///
    /// - Parameters:
    ///   - transport: What sends the requests on this worker; its connections per host should
    ///     be at least the worker's `limit`.
    ///   - whenSending: Called as each request is handed to `transport`, on the handler's task:
    ///     with `whenSent`, counts for a worker's closing line (a request sent whose outcome
    ///     never came was in flight when the worker stopped).
    ///   - whenSent: Called with each outcome once stored in memory (before the store records
    ///     it), on the handler's task: counts for a worker's closing line.
    public func registerHTTPJobs(
        sendingThrough transport: any HTTPTransport, whenSending: (@Sendable () -> Void)? = nil,
        whenSent: (@Sendable (HTTPJob.Outcome) -> Void)? = nil
    ) {
        let worker = self.worker
        register(HTTPJob.kind) { request, _ in
            whenSending?()
            let outcome = try await HTTPJob.send(request, through: transport, worker: worker)
            whenSent?(outcome)
            return outcome
        }
    }
}
