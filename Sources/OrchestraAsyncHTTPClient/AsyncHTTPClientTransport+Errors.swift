import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import OrchestraHTTP

/// AsyncHTTPClient's and SwiftNIO's errors in words: a cancelled request becomes
/// `CancellationError`, every other error an `HTTPTransportError` with the
/// client's error kept as its underlying error.
extension AsyncHTTPClientTransport {
    static func mapped(_ error: any Error, authority: String?, limit: Int) -> any Error {
        if let error = error as? HTTPClientError, error == .cancelled || error == .requestStreamCancelled {
            return CancellationError()
        }
        if let decoding = error as? NIOHTTPDecompression.DecompressionError, case .limit = decoding {
            return HTTPTransportError(
                code: .responseTooLarge,
                message: "the response from \(authority ?? "the server") is larger than \(limit) bytes (decoded)",
                host: authority, underlying: error)
        }
        let (code, detail) = classify(error)
        var message = HTTPTransportError.standardMessage(for: code, authority: authority)
        if let detail { message += code == .tls ? ": \(detail)" : " (\(detail))" }
        return HTTPTransportError(code: code, message: message, host: authority, underlying: error)
    }

    /// The code for a client error, and a few words when the code alone is vague.
    private static func classify(_ error: any Error) -> (HTTPTransportError.Code, String?) {
        switch error {
        case let error as HTTPClientError: classify(error)
        case let error as NIOConnectionError:
            // The first connection attempt's error says why; with none, the name did not resolve.
            if let first = error.connectionErrors.first { classify(first.error) } else { (.hostNotFound, nil) }
        case let error as IOError: classify(errno: error.errnoCode)
        case let error as ChannelError: classify(error)
        case is SocketAddressError.UnknownHost: (.hostNotFound, nil)
        case is HTTPParserError: (.badResponse, "not a valid HTTP response")
        case let error as NIOSSLError: (.tls, tlsReason(error))
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            (.tls, "the server's certificate is not valid for this host name")
        case _ where String(reflecting: type(of: error)).hasPrefix("NIOSSL."): (.tls, "\(error)")
        case is NIOHTTPDecompression.DecompressionError: (.badResponse, "its compressed body cannot be decoded")
        case is NIOHTTPDecompression.ExtraDecompressionError: (.badResponse, "its compressed body ends early")
        default: (.other, "\(error)")
        }
    }

    /// What went wrong in a TLS handshake, in words, from BoringSSL's reason codes.
    private static func tlsReason(_ error: NIOSSLError) -> String {
        let text = "\(error)"
        return if text.contains("CERTIFICATE_VERIFY_FAILED") {
            HTTPTransportError.untrustedCertificate("its issuer is not a trusted root, or it has expired")
        } else if text.contains("WRONG_VERSION_NUMBER") || text.contains("UNKNOWN_PROTOCOL") {
            "the server does not speak TLS on this port (plain HTTP?)"
        } else if text.contains("CERTIFICATE_REQUIRED") || text.contains("HANDSHAKE_FAILURE")
            || text.contains("BAD_CERTIFICATE")
        {
            HTTPTransportError.refusedHandshake
        } else if text.contains("UNKNOWN_CA") {
            "the server does not trust the client certificate"
        } else {
            text
        }
    }

    private static func classify(_ error: HTTPClientError) -> (HTTPTransportError.Code, String?) {
        switch error {
        case .connectTimeout: (.timedOut, "connecting took too long")
        case .readTimeout, .writeTimeout, .deadlineExceeded: (.timedOut, nil)
        case .getConnectionFromPoolTimeout: (.timedOut, "no connection became free")
        case .tlsHandshakeTimeout: (.timedOut, "the TLS handshake took too long")
        case .socksHandshakeTimeout, .httpProxyHandshakeTimeout: (.timedOut, "the proxy handshake took too long")
        case .remoteConnectionClosed, .uncleanShutdown: (.connectionLost, nil)
        case .traceRequestWithBody: (.bodyNotAllowed, "a TRACE request cannot have a body")
        case .invalidProxyResponse: (.badResponse, "the proxy's answer to CONNECT is not HTTP")
        case .proxyAuthenticationRequired: (.invalidRequest, HTTPTransportError.proxyRefusedCredentials)
        case .alreadyShutdown: (.invalidRequest, "the HTTP client was shut down")
        case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath:
            (.invalidRequest, "AsyncHTTPClient cannot send to this URL")
        case .bodyLengthMismatch, .identityCodingIncorrectlyPresent, .writeAfterRequestSent:
            (.invalidRequest, "its framing headers do not match its body")
        default: (.other, "\(error)")
        }
    }

    private static func classify(errno: CInt) -> (HTTPTransportError.Code, String?) {
        switch errno {
        case ECONNREFUSED: (.connectionRefused, nil)
        case ECONNRESET, EPIPE, ECONNABORTED: (.connectionLost, nil)
        case ETIMEDOUT: (.timedOut, nil)
        case ENETUNREACH, EHOSTUNREACH, ENETDOWN: (.notConnected, nil)
        default: (.other, String(cString: strerror(errno)))
        }
    }

    private static func classify(_ error: ChannelError) -> (HTTPTransportError.Code, String?) {
        switch error {
        case .connectTimeout: (.timedOut, "connecting took too long")
        case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed, .eof: (.connectionLost, nil)
        case .writeHostUnreachable: (.notConnected, nil)
        default: (.other, "\(error)")
        }
    }
}
