import Foundation
import HTTPTypes
import HTTPTypesFoundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Requests to `URLRequest`s and responses back, byte for byte where URLSession allows it.
extension URLSessionTransport {
    /// The `URLRequest` for `request` and `body`, or the reason URLSession cannot send it as
    /// it is.
    ///
    /// On Linux, a request to an IPv6 address (`http://[::1]:8080/`) is given to URLSession
    /// with a stand-in host, and to curl with its real URL (``IPLiteralURL``).
    ///
    /// - Throws: ``HTTPTransportError``: ``HTTPTransportError/Code/invalidRequest`` for a
    ///   request without a valid URL or (on Linux) a header value that is not UTF-8 or an IPv6
    ///   address with a zone (`[fe80::1%25eth0]`);
    ///   ``HTTPTransportError/Code/bodyNotAllowed`` for a `GET` with a body.
    static func urlRequest(for request: HTTPRequest, body: Data?) throws -> URLRequest {
        let authority = request.authority
        guard var urlRequest = URLRequest(httpRequest: request) else {
            let target = "\(request.scheme ?? "?")://\(authority ?? "?")\(request.path ?? "")"
            throw HTTPTransportError(
                code: .invalidRequest, message: "request \(request.method) \(target) has no valid URL", host: authority)
        }
        if request.method == .get, let body, !body.isEmpty {
            throw HTTPTransportError(
                code: .bodyNotAllowed,
                message:
                    "URLSession cannot send a body with GET (to \(authority ?? "the server")); AsyncHTTPClientTransport can",
                host: authority
            )
        }
        urlRequest.httpBody = request.method == .get ? nil : body
        #if canImport(FoundationNetworking)
        // Linux's URLSession refuses an IPv6 address: it is given a stand-in (see IPLiteralURL).
        if authority?.utf8.first == UInt8(ascii: "["), let url = urlRequest.url {
            guard let standIn = IPLiteralURL.standIn(for: url) else {
                throw HTTPTransportError(
                    code: .invalidRequest,
                    message:
                        "URLSession on Linux cannot send to an IPv6 address with a zone (\(authority ?? "?")); AsyncHTTPClientTransport can",
                    host: authority)
            }
            urlRequest.url = standIn
        }
        // HTTPTypesFoundation gives URLSession each value as ISO Latin-1 (what Apple platforms
        // send as bytes); Linux's URLSession sends the string as UTF-8, so a UTF-8 value would
        // go out encoded twice (café as c3 83 c2 a9). Give it the UTF-8 string instead.
        var combined: [HTTPField.Name: String] = [:]
        for field in request.headerFields {
            guard let value = field.utf8Value else {
                throw HTTPTransportError.unsendableHeader(
                    field.name, client: "URLSession on Linux", authority: authority)
            }
            let separator = field.name == .cookie ? "; " : ", "
            combined[field.name] = combined[field.name].map { "\($0)\(separator)\(value)" } ?? value
        }
        urlRequest.allHTTPHeaderFields = Dictionary(uniqueKeysWithValues: combined.map { ($0.key.rawName, $0.value) })
        #endif
        return urlRequest
    }

    /// `response` as an `HTTPResponse`, its header values as the bytes that arrived.
    ///
    /// - Throws: ``HTTPTransportError`` (``HTTPTransportError/Code/badResponse``) for a status
    ///   outside 0…999.
    static func httpResponse(from response: HTTPURLResponse, authority: String?) throws -> HTTPResponse {
        #if canImport(FoundationNetworking)
        // Linux's URLSession decodes header lines as UTF-8; HTTPTypesFoundation would read the
        // strings as ISO Latin-1 and mangle any non-ASCII value.
        guard (0...999).contains(response.statusCode) else {
            throw HTTPTransportError(
                code: .badResponse,
                message: "bad response from \(authority ?? "the server"): status \(response.statusCode)",
                host: authority)
        }
        var fields = HTTPFields()
        for case let (name as String, value as String) in response.allHeaderFields {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return HTTPResponse(status: .init(code: response.statusCode), headerFields: fields)
        #else
        guard let converted = response.httpResponse else {
            throw HTTPTransportError(
                code: .badResponse,
                message: "bad response from \(authority ?? "the server"): status \(response.statusCode)",
                host: authority)
        }
        return converted
        #endif
    }
}
