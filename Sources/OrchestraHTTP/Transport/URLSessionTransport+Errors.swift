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
        let (code, detail) = classify(urlError.code)
        var message = HTTPTransportError.standardMessage(for: code, authority: authority)
        if let detail { message += " (\(detail))" }
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
            (.tls, "the server's certificate is not trusted")
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
}
