import Foundation
import HTTPTypes
import OrchestraHTTP

/// Requests to the server, the echo's parsing, and failures in words.
extension HTTPTransportConformance {
    /// `method` to `pathAndQuery` on ``server``.
    func request(_ method: HTTPRequest.Method, _ pathAndQuery: String, contentType: String? = nil) -> HTTPRequest {
        // An IPv6 address goes in brackets (`[::1]:8080`).
        let host = server.host.map { $0.contains(":") && !$0.hasPrefix("[") ? "[\($0)]" : $0 } ?? "127.0.0.1"
        let authority = server.port.map { "\(host):\($0)" } ?? host
        let base = server.path == "/" ? "" : server.path
        var request = HTTPRequest(
            method: method, scheme: server.scheme ?? "http", authority: authority, path: base + pathAndQuery)
        if let contentType { request.headerFields[.contentType] = contentType }
        return request
    }

    /// Sends `request`; an error (other than the check's own cancellation) becomes a failure
    /// of `check`, saying what was expected.
    func send(
        _ check: Check, _ request: HTTPRequest, body: Data? = nil, expected: String
    ) async throws -> (HTTPResponse, Data) {
        try await catching(check, expected: expected) { try await transport.send(request, body: body) }
    }

    /// Runs `body`; an error other than the check's own cancellation or a conformance failure
    /// becomes a failure of `check`.
    func catching<T>(_ check: Check, expected: String? = nil, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CancellationError where Task.isCancelled {
            throw error
        } catch let error as HTTPTransportConformanceFailure {
            throw error
        } catch {
            throw failure(check, expected: expected, actual: "\(type(of: error)): \(error)")
        }
    }

    /// Sends `request` to the echo route and parses the echo. An `HTTPTransportError` is
    /// thrown as it is, for the checks that accept one.
    func echo(_ check: Check, _ request: HTTPRequest, body: Data?) async throws -> Echo {
        let response: HTTPResponse
        let data: Data
        do {
            (response, data) = try await transport.send(request, body: body)
        } catch let error as HTTPTransportError {
            throw error
        } catch let error as CancellationError where Task.isCancelled {
            throw error
        } catch {
            throw failure(check, actual: "\(type(of: error)): \(error)")
        }
        guard response.status.code == 200,
            let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else {
            throw failure(
                check, expected: "a JSON echo from \(request.path ?? "/anything")",
                actual: "\(response.status.code), \(data.count) bytes")
        }
        return Echo(json: json)
    }

    func require(_ check: Check, _ condition: Bool, expected: String, actual: @autoclosure () -> String) throws {
        if !condition { throw failure(check, expected: expected, actual: actual()) }
    }

    /// Compares bytes the server echoed with the bytes sent.
    func compare(_ check: Check, _ received: Data?, with sent: Data, what: String) throws {
        guard let received else { throw failure(check, expected: "\(what) echoed", actual: "no body in the echo") }
        guard received != sent else { return }
        let first =
            zip(received, sent).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(received.count, sent.count)
        throw failure(
            check, expected: "\(what): \(sent.count) bytes as sent",
            actual: "\(received.count) bytes, the first difference at byte \(first)")
    }

    func failure(_ check: Check, expected: String? = nil, actual: String) -> HTTPTransportConformanceFailure {
        HTTPTransportConformanceFailure(check: check, expected: expected ?? check.expectation, actual: actual)
    }

    func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }

    /// httpbin's (and the demo server's) echo of a request.
    struct Echo {
        let json: [String: Any]

        var method: String? { json["method"] as? String }

        /// The body: `data` is the body as text, or a base64 `data:` URL when it is not UTF-8.
        var body: Data? {
            guard let data = json["data"] as? String else { return nil }
            if data.hasPrefix("data:"), let marker = data.range(of: ";base64,") {
                return Data(base64Encoded: String(data[marker.upperBound...]))
            }
            return Data(data.utf8)
        }

        /// The bytes of header `name` as they arrived: the echo reads them as ISO Latin-1, one
        /// character per byte.
        func headerBytes(named name: String) -> [UInt8]? {
            guard let headers = json["headers"] as? [String: String],
                let value = headers.first(where: { $0.key.caseInsensitiveCompare(name) == .orderedSame })?.value
            else { return nil }
            let scalars = value.unicodeScalars
            guard scalars.allSatisfy({ $0.value <= 0xFF }) else { return Array(value.utf8) }
            return scalars.map { UInt8($0.value) }
        }
    }
}
