import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession's errors in words: `URLError.cancelled` becomes `CancellationError`, every other
/// error an ``HTTPTransportError`` with the `URLError` kept as its underlying error.
extension URLSessionTransport {
    /// `error` as the transport throws it: `CancellationError` or an ``HTTPTransportError``
    /// naming `authority`.
    package static func mapped(_ error: any Error, authority: String?) -> any Error {
        let urlError: URLError
        if let error = error as? URLError {
            urlError = error
        } else if (error as NSError).domain == NSURLErrorDomain {
            urlError = URLError(_nsError: error as NSError)
        } else {
            return HTTPTransportError(
                code: .other, message: "the request to \(authority ?? "the server") failed: \(error)", host: authority,
                underlying: error
            )
        }
        if urlError.code == .cancelled { return CancellationError() }
        // Linux's URLSession reports most of curl's errors as "unknown" (-1), with curl's
        // message as the description: the message says what happened.
        let (code, detail) =
            urlError.code == .unknown
            ? classify(curlMessage: (urlError as NSError).localizedDescription) : classify(urlError.code)
        var message = HTTPTransportError.standardMessage(for: code, authority: authority)
        if let detail { message += code == .tls ? ": \(detail)" : " (\(detail))" }
        return HTTPTransportError(code: code, message: message, host: authority, underlying: urlError)
    }

    /// The code for a `URLError` code, and a few words when the code alone is vague.
    private static func classify(_ code: URLError.Code) -> (HTTPTransportError.Code, String?) {
        switch code {
        case .cannotConnectToHost: (.connectionRefused, nil)
        case .cannotFindHost, .dnsLookupFailed: (.hostNotFound, nil)
        case .timedOut: (.timedOut, nil)
        case .networkConnectionLost: (.connectionLost, nil)
        case .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .cannotLoadFromNetwork, .callIsActive:
            (.notConnected, nil)
        case .secureConnectionFailed: (.tls, nil)
        case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot:
            (.tls, HTTPTransportError.untrustedCertificate("its issuer is not a trusted root"))
        case .serverCertificateHasBadDate: (.tls, "the server's certificate has expired")
        case .serverCertificateNotYetValid: (.tls, "the server's certificate is not valid yet")
        case .clientCertificateRejected: (.tls, "the server rejected the client certificate")
        case .clientCertificateRequired: (.tls, "the server requires a client certificate")
        case .appTransportSecurityRequiresSecureConnection: (.tls, "App Transport Security requires HTTPS")
        case .badServerResponse, .cannotParseResponse: (.badResponse, nil)
        case .cannotDecodeContentData, .cannotDecodeRawData: (.badResponse, "its body could not be decoded")
        case .zeroByteResource: (.badResponse, "no data")
        case .badURL, .unsupportedURL: (.invalidRequest, "URLSession cannot send to this URL")
        case .requestBodyStreamExhausted: (.invalidRequest, "the request body ended early")
        case .dataLengthExceedsMaximum: (.responseTooLarge, nil)
        case .resourceUnavailable: (.other, "resource unavailable")
        default: (.other, "URLSession error \(code.rawValue)")
        }
    }

    /// The code for one of curl's messages (Linux), and the message in the words the other
    /// transport uses for the same failure.
    package static func classify(curlMessage text: String) -> (HTTPTransportError.Code, String?) {
        let lower = text.lowercased()
        if lower.contains("connect tunnel failed, response 407") {
            return (.invalidRequest, HTTPTransportError.proxyRefusedCredentials)
        }
        if lower.contains("connect tunnel failed") || lower.contains("proxy connect aborted") {
            return (.connectionRefused, "the proxy did not open a tunnel: \(text)")
        }
        if let range = text.range(of: "SSL certificate problem: ") {
            return (.tls, HTTPTransportError.untrustedCertificate(String(text[range.upperBound...])))
        }
        if lower.contains("subject name") && lower.contains("match") {
            return (.tls, "the server's certificate is not valid for this host name")
        }
        if lower.contains("alert certificate required") || lower.contains("alert handshake failure")
            || lower.contains("alert bad certificate")
        {
            return (.tls, HTTPTransportError.refusedHandshake)
        }
        if lower.contains("alert unknown ca") { return (.tls, "the server does not trust the client certificate") }
        if lower.contains("wrong version number") {
            return (.tls, "the server does not speak TLS on this port (plain HTTP?)")
        }
        if lower.contains("ssl") || lower.contains("certificate") || lower.contains("private key") {
            return (.tls, text)
        }
        if lower.contains("transfer closed with") || lower.contains("bytes remaining") {
            return (.connectionLost, "the body ended early")
        }
        if lower.contains("invalid content-length") || lower.contains("weird server reply")
            || lower.contains("unsupported http version") || lower.contains("header") && lower.contains("too")
        {
            return (.badResponse, "not a valid HTTP response: \(text)")
        }
        // curl's error for a header line past its 100 KB limit.
        if lower == "out of memory" { return (.badResponse, "a header is too large (curl: \(text))") }
        if lower.contains("unencoding") || lower.contains("content encoding") {
            return (.badResponse, "its compressed body cannot be decoded")
        }
        return (.other, text.isEmpty ? "URLSession error -1" : text)
    }
}
