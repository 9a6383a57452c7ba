import Foundation
import HTTPTypes
import OrchestraDurable
import OrchestraHTTP

/// One HTTP exchange as a durable job: `orchestra run --state postgres://…` appends one per
/// request it sends, and whichever `orchestra worker` claims it sends the request and stores
/// the response (or why none came back) as the job's output.
enum HTTPJob {
    /// The job kind the workers register.
    static let kind = JobKind<Request, Outcome>("orchestra.http")

    /// The most bytes of request body a job carries to a worker: the body is stored in the
    /// job's row, as JSON.
    static let maximumBodySize = 16 << 20

    /// A request as a job's input: everything a worker needs to send it.
    struct Request: Codable, Sendable, Hashable {
        var method: String
        var scheme: String?
        var authority: String?
        var path: String?
        /// `[name, value]` pairs, in order.
        var headers: [[String]]
        var body: Data?

        init(_ request: HTTPRequest, body: Data?) {
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
        func httpRequest() throws -> HTTPRequest {
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
    struct Outcome: Codable, Sendable {
        struct Response: Codable, Sendable {
            var status: Int
            var reason: String
            var headers: [[String]]
            var body: Data
        }

        struct Failure: Codable, Sendable {
            var code: String
            var message: String
            var host: String?
        }

        var response: Response?
        var failure: Failure?
        /// The worker that sent the request.
        var worker: String

        init(response: HTTPResponse, body: Data, worker: String) {
            self.response = Response(
                status: response.status.code, reason: response.status.reasonPhrase,
                headers: response.headerFields.map { [$0.name.rawName, $0.value] }, body: body)
            self.worker = worker
        }

        init(failure: HTTPTransportError, worker: String) {
            self.failure = Failure(code: failure.code.description, message: failure.message, host: failure.host)
            self.worker = worker
        }

        /// The response, or the transport error, as the worker saw it.
        func result() throws -> (HTTPResponse, Data) {
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

    /// Sends the job's request through `transport` (on a worker).
    static func send(_ request: Request, through transport: any HTTPTransport, worker: String) async throws -> Outcome {
        do {
            let (response, body) = try await transport.send(try request.httpRequest(), body: request.body)
            return Outcome(response: response, body: body, worker: worker)
        } catch let error as HTTPTransportError {
            return Outcome(failure: error, worker: worker)
        }
    }
}
