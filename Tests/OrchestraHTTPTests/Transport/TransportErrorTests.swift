import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraAsyncHTTPClient
@testable import OrchestraHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Client errors in words: both transports map their clients' errors to the same codes and
/// messages, and refuse before sending what they cannot send as it is.
@Suite("Transport errors", .timeLimit(.minutes(2)), .takesTurns)
struct TransportErrorTests {
    struct Case: Sendable, CustomStringConvertible {
        var error: any Error
        var code: HTTPTransportError.Code
        var message: String
        var description: String { "\(code)" }
    }

    static let urlErrors: [Case] = [
        Case(
            error: URLError(.cannotConnectToHost), code: .connectionRefused,
            message: "connection refused by api.test:8080"),
        Case(error: URLError(.cannotFindHost), code: .hostNotFound, message: "cannot resolve host api.test"),
        Case(error: URLError(.dnsLookupFailed), code: .hostNotFound, message: "cannot resolve host api.test"),
        Case(error: URLError(.timedOut), code: .timedOut, message: "the connection to api.test:8080 timed out"),
        Case(
            error: URLError(.networkConnectionLost), code: .connectionLost,
            message: "the connection to api.test:8080 was lost"),
        Case(
            error: URLError(.notConnectedToInternet), code: .notConnected,
            message: "not connected to the network (sending to api.test:8080)"),
        Case(
            error: URLError(.serverCertificateUntrusted), code: .tls,
            message:
                "TLS connection to api.test:8080 failed: certificate not trusted: its issuer is not a trusted root (use --cacert or --insecure)"
        ),
        Case(error: URLError(.badServerResponse), code: .badResponse, message: "bad response from api.test:8080"),
        Case(
            error: URLError(.dataLengthExceedsMaximum), code: .responseTooLarge,
            message: "the response from api.test:8080 is too large"),
        Case(
            error: URLError(.unsupportedURL), code: .invalidRequest,
            message: "the request to api.test:8080 failed (URLSession cannot send to this URL)"),
        Case(
            error: URLError(.userAuthenticationRequired), code: .other,
            message: "the request to api.test:8080 failed (URLSession error -1013)"),
        Case(
            error: NSError(domain: NSURLErrorDomain, code: -1004), code: .connectionRefused,
            message: "connection refused by api.test:8080"),
        // Linux's URLSession reports curl's errors as -1 with curl's message (issue 35).
        Case(
            error: NSError(
                domain: NSURLErrorDomain, code: -1,
                userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: unable to get local issuer certificate"]
            ),
            code: .tls,
            message:
                "TLS connection to api.test:8080 failed: certificate not trusted: unable to get local issuer certificate (use --cacert or --insecure)"
        ),
        Case(
            error: NSError(
                domain: NSURLErrorDomain, code: -1,
                userInfo: [
                    NSLocalizedDescriptionKey:
                        "OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0"
                ]),
            code: .tls,
            message:
                "TLS connection to api.test:8080 failed: the server refused the handshake; it may want a client certificate (--cert and --key)"
        ),
        Case(
            error: NSError(
                domain: NSURLErrorDomain, code: -1,
                userInfo: [NSLocalizedDescriptionKey: "CONNECT tunnel failed, response 407"]),
            code: .invalidRequest,
            message:
                "the request to api.test:8080 failed (the proxy asks for a user and password, or refused the ones given (407 Proxy Authentication Required))"
        ),
        Case(
            error: NSError(
                domain: NSURLErrorDomain, code: -1,
                userInfo: [NSLocalizedDescriptionKey: "transfer closed with 1000 bytes remaining to read"]),
            code: .connectionLost,
            message: "the connection to api.test:8080 was lost (the body ended early)"),
        Case(
            error: NSError(
                domain: NSURLErrorDomain, code: -1,
                userInfo: [NSLocalizedDescriptionKey: "Invalid Content-Length: value"]),
            code: .badResponse,
            message: "bad response from api.test:8080 (not a valid HTTP response: Invalid Content-Length: value)"),
        Case(
            error: NSError(domain: NSURLErrorDomain, code: -1, userInfo: [NSLocalizedDescriptionKey: "Out of memory"]),
            code: .badResponse,
            message: "bad response from api.test:8080 (a header is too large (curl: Out of memory))"),
    ]

    @Test(arguments: urlErrors)
    func urlSessionErrorsInWords(_ expected: Case) throws {
        let mapped = try #require(
            URLSessionTransport.mapped(expected.error, authority: "api.test:8080") as? HTTPTransportError)
        #expect(mapped.code == expected.code)
        #expect(mapped.message == expected.message)
        #expect(mapped.host == "api.test:8080")
        #expect(mapped.underlying is URLError)
        #expect(!mapped.message.contains("NSURLErrorDomain"))
    }

    @Test func urlSessionCancelledIsCancellationError() {
        #expect(URLSessionTransport.mapped(URLError(.cancelled), authority: nil) is CancellationError)
    }

    static let clientErrors: [Case] = [
        Case(
            error: HTTPClientError.connectTimeout, code: .timedOut,
            message: "the connection to api.test:8080 timed out (connecting took too long)"),
        Case(error: HTTPClientError.readTimeout, code: .timedOut, message: "the connection to api.test:8080 timed out"),
        Case(
            error: HTTPClientError.remoteConnectionClosed, code: .connectionLost,
            message: "the connection to api.test:8080 was lost"),
        Case(
            error: HTTPClientError.alreadyShutdown, code: .invalidRequest,
            message: "the request to api.test:8080 failed (the HTTP client was shut down)"),
        Case(
            error: HTTPClientError.traceRequestWithBody, code: .bodyNotAllowed,
            message: "the request to api.test:8080 failed (a TRACE request cannot have a body)"),
        Case(
            error: IOError(errnoCode: ECONNREFUSED, reason: "connect"), code: .connectionRefused,
            message: "connection refused by api.test:8080"),
        Case(
            error: IOError(errnoCode: ECONNRESET, reason: "read"), code: .connectionLost,
            message: "the connection to api.test:8080 was lost"),
        Case(error: ChannelError.eof, code: .connectionLost, message: "the connection to api.test:8080 was lost"),
        Case(
            error: ChannelError.connectTimeout(.seconds(10)), code: .timedOut,
            message: "the connection to api.test:8080 timed out (connecting took too long)"),
        Case(
            error: HTTPParserError.invalidStatus, code: .badResponse,
            message: "bad response from api.test:8080 (not a valid HTTP response)"),
    ]

    @Test(arguments: clientErrors)
    func asyncHTTPClientErrorsInWords(_ expected: Case) throws {
        let mapped = try #require(
            AsyncHTTPClientTransport.mapped(expected.error, authority: "api.test:8080", limit: 1 << 20)
                as? HTTPTransportError)
        #expect(mapped.code == expected.code)
        #expect(mapped.message == expected.message)
        #expect(mapped.underlying != nil)
    }

    @Test func asyncHTTPClientCancelledIsCancellationError() {
        #expect(
            AsyncHTTPClientTransport.mapped(HTTPClientError.cancelled, authority: nil, limit: 1 << 20)
                is CancellationError)
    }

    @Test func transientCodesAreTheFailuresWorthRetrying() {
        let transient: [HTTPTransportError.Code] = [
            .connectionRefused, .hostNotFound, .timedOut, .connectionLost, .notConnected, .badResponse, .other,
        ]
        let final: [HTTPTransportError.Code] = [.invalidRequest, .bodyNotAllowed, .tls, .responseTooLarge]
        #expect(transient.allSatisfy { HTTPTransportError(code: $0, message: "").isTransient })
        #expect(final.allSatisfy { !HTTPTransportError(code: $0, message: "").isTransient })
    }

    @Test func urlSessionRefusesAGetWithABodyBeforeSending() async throws {
        try await withDemoServer { server in
            var request = server.request("/anything")
            request.headerFields[.contentType] = "text/plain"
            let error = await #expect(throws: HTTPTransportError.self) {
                try await URLSessionTransport().send(request, body: Data("body".utf8))
            }
            #expect(error?.code == .bodyNotAllowed)
            #expect(
                error?.message
                    == "URLSession cannot send a body with GET (to \(server.authority)); AsyncHTTPClientTransport can")
            #expect(server.arrivals(of: "/anything") == 0)
            // An empty body is no body.
            let (response, _) = try await URLSessionTransport().send(request, body: Data())
            #expect(response.status == .ok)
        }
    }

    @Test func aHeaderValueThatIsNotUTF8IsRefusedNamingTheHeader() async throws {
        try await withDemoServer { server in
            var request = server.request("/anything")
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Latin1")!, value: [0x63, 0x61, 0x66, 0xE9]))
            #if canImport(FoundationNetworking)
            let urlSession = await #expect(throws: HTTPTransportError.self) {
                try await URLSessionTransport().send(request, body: nil)
            }
            #expect(urlSession?.code == .invalidRequest)
            #expect(urlSession?.message.contains("'X-Latin1'") == true)
            #endif
            try await AsyncHTTPClientTransport.withTransport { transport in
                let client = await #expect(throws: HTTPTransportError.self) {
                    try await transport.send(request, body: nil)
                }
                #expect(client?.code == .invalidRequest)
                #expect(client?.message.contains("'X-Latin1'") == true)
            }
            #expect(server.arrivals(of: "/anything") == 0)
        }
    }

    @Test func aResponseLargerThanTheLimitIsResponseTooLarge() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport(maximumBodySize: 1_000) { transport in
                let error = await #expect(throws: HTTPTransportError.self) {
                    try await transport.send(server.request("/bytes/1001"), body: nil)
                }
                #expect(error?.code == .responseTooLarge)
                #expect(error?.message == "the response from \(server.authority) is larger than 1000 bytes")
                let (_, data) = try await transport.send(server.request("/bytes/1000"), body: nil)
                #expect(data.count == 1_000)
            }
        }
    }

    @Test func aResponseToAFileUploadLargerThanTheLimitIsResponseTooLarge() async throws {
        // A file body goes through the client's streaming API, a body in memory through its
        // delegate API: both hold the limit.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-upload-\(UUID())")
        try Data(repeating: UInt8(ascii: "x"), count: 2_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport(maximumBodySize: 1_000) { transport in
                var request = server.request("/anything")
                request.method = .post
                let error = await #expect(throws: HTTPTransportError.self) {
                    try await transport.send(request, content: .file(file), progress: nil)
                }
                #expect(error?.code == .responseTooLarge)
                #expect(error?.message == "the response from \(server.authority) is larger than 1000 bytes")
                #expect(server.arrivals(of: "/anything") == 1)
            }
        }
    }
}
