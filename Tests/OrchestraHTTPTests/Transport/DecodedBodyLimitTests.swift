import Foundation
import HTTPTypes
import OrchestraAsyncHTTPClient
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// The body limit counts the bytes a transport hands over, decoded: URLSession inflates a
/// gzip body before the transport sees it, so a small compressed body that inflates past the
/// limit is cancelled at the limit instead of being inflated whole (issue 32: 10 MB of gzip
/// inflating to 10 GB was OOM-killed). AsyncHTTPClient decodes too since issue 35 (its decoder
/// stops at the limit).
@Suite("Transports: the body limit counts decoded bytes", .serialized, .timeLimit(.minutes(1)), .takesTurns)
struct DecodedBodyLimitTests {
    static let limit = 1 << 20

    /// The head of a gzip response without a length: its body ends when the connection closes.
    static let head = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n".utf8)

    @Test func urlSessionCancelsAGzipBodyThatInflatesPastTheLimit() async throws {
        // 64 KB of gzip that inflates to about 10 MB, then more for as long as the client reads.
        let reply: RawHTTPServer.Handler = { _ in
            .stream(head: Self.head + DemoCompression.zerosStart, chunk: DemoCompression.zerosChunk, limit: 64 << 10)
        }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport(maximumBodySize: Self.limit)
            let request = HTTPRequest(method: .get, url: URL(string: server.url("/bomb"))!)
            let error = await #expect(throws: HTTPTransportError.self) {
                try await transport.send(request, body: nil)
            }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.message == "the response from 127.0.0.1:\(server.port) is larger than 1048576 bytes")
        }
    }

    @Test func urlSessionInflatesAGzipBodyWithinTheLimit() async throws {
        // The encoder is right: the same stream, ended, inflates to the bytes it stands for.
        let body =
            DemoCompression.zerosStart + DemoCompression.zerosChunk + DemoCompression.zerosChunk
            + DemoCompression.zerosEnd(chunks: 2)
        let reply: RawHTTPServer.Handler = { _ in .raw(Self.head + body) }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport(maximumBodySize: Self.limit)
            let (response, data) = try await transport.send(
                HTTPRequest(method: .get, url: URL(string: server.url("/small"))!), body: nil)
            #expect(response.status == .ok)
            #expect(data.count == DemoCompression.inflatedSize(chunks: 2))
            #expect(data.allSatisfy { $0 == 0 })
        }
    }

    @Test func asyncHTTPClientStopsAGzipBodyThatInflatesPastTheLimit() async throws {
        // 4 MB of gzip that inflate to about 640 MB: refused at the limit of decoded bytes
        // (before issue 35 the body came back as sent, undecoded). A bomb that ends sooner can
        // end first: the client then reports the end of its stream.
        let reply: RawHTTPServer.Handler = { _ in
            .stream(head: Self.head + DemoCompression.zerosStart, chunk: DemoCompression.zerosChunk, limit: 4 << 20)
        }
        try await withRawHTTPServer(reply) { server in
            try await AsyncHTTPClientTransport.withTransport(maximumBodySize: Self.limit) { transport in
                let request = HTTPRequest(method: .get, url: URL(string: server.url("/bomb"))!)
                let error = await #expect(throws: HTTPTransportError.self) {
                    try await transport.send(request, body: nil)
                }
                #expect(error?.code == .responseTooLarge)
                #expect(
                    error?.message
                        == "the response from 127.0.0.1:\(server.port) is larger than 1048576 bytes (decoded)")
            }
        }
    }

    @Test func asyncHTTPClientAsksForAndInflatesAGzipBody() async throws {
        let body =
            DemoCompression.zerosStart + DemoCompression.zerosChunk + DemoCompression.zerosChunk
            + DemoCompression.zerosEnd(chunks: 2)
        let reply: RawHTTPServer.Handler = { _ in .raw(Self.head + body) }
        try await withRawHTTPServer(reply) { server in
            try await AsyncHTTPClientTransport.withTransport(maximumBodySize: Self.limit) { transport in
                let (response, data) = try await transport.send(
                    HTTPRequest(method: .get, url: URL(string: server.url("/small"))!), body: nil)
                #expect(response.status == .ok)
                #expect(data.count == DemoCompression.inflatedSize(chunks: 2))
                #expect(data.allSatisfy { $0 == 0 })
                #expect(server.requests.first?.header("Accept-Encoding")?.contains("gzip") == true)
            }
        }
    }

    @Test func asyncHTTPClientReturnsTheBodyAsSentWhenDecodingIsOff() async throws {
        let body = DemoCompression.zerosStart + DemoCompression.zerosChunk + DemoCompression.zerosEnd(chunks: 1)
        let reply: RawHTTPServer.Handler = { _ in .raw(Self.head + body) }
        try await withRawHTTPServer(reply) { server in
            try await AsyncHTTPClientTransport.withTransport(settings: .init(decompresses: false)) { transport in
                let (_, data) = try await transport.send(
                    HTTPRequest(method: .get, url: URL(string: server.url("/as-sent"))!), body: nil)
                #expect(Array(data) == body)
                #expect(server.requests.first?.header("Accept-Encoding") == nil)
            }
        }
    }
}
