import Foundation
import HTTPTypes
import OrchestraAsyncHTTPClient
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
            .stream(head: Self.head + GzipBomb.start, chunk: GzipBomb.chunk, limit: 64 << 10)
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
        let body = GzipBomb.start + GzipBomb.chunk + GzipBomb.chunk + GzipBomb.end(chunks: 2)
        let reply: RawHTTPServer.Handler = { _ in .raw(Self.head + body) }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport(maximumBodySize: Self.limit)
            let (response, data) = try await transport.send(
                HTTPRequest(method: .get, url: URL(string: server.url("/small"))!), body: nil)
            #expect(response.status == .ok)
            #expect(data.count == GzipBomb.inflatedSize(chunks: 2))
            #expect(data.allSatisfy { $0 == 0 })
        }
    }

    @Test func asyncHTTPClientStopsAGzipBodyThatInflatesPastTheLimit() async throws {
        // 64 KB of gzip that inflates to about 10 MB: refused at the limit of decoded bytes
        // (before issue 35 the body came back as sent, undecoded).
        let reply: RawHTTPServer.Handler = { _ in
            .stream(head: Self.head + GzipBomb.start, chunk: GzipBomb.chunk, limit: 64 << 10)
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
        let body = GzipBomb.start + GzipBomb.chunk + GzipBomb.chunk + GzipBomb.end(chunks: 2)
        let reply: RawHTTPServer.Handler = { _ in .raw(Self.head + body) }
        try await withRawHTTPServer(reply) { server in
            try await AsyncHTTPClientTransport.withTransport(maximumBodySize: Self.limit) { transport in
                let (response, data) = try await transport.send(
                    HTTPRequest(method: .get, url: URL(string: server.url("/small"))!), body: nil)
                #expect(response.status == .ok)
                #expect(data.count == GzipBomb.inflatedSize(chunks: 2))
                #expect(data.allSatisfy { $0 == 0 })
                #expect(server.requests.first?.header("Accept-Encoding")?.contains("gzip") == true)
            }
        }
    }

    @Test func asyncHTTPClientReturnsTheBodyAsSentWhenDecodingIsOff() async throws {
        let body = GzipBomb.start + GzipBomb.chunk + GzipBomb.end(chunks: 1)
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

/// A gzip stream of zeros made of fixed-Huffman deflate blocks of back-references, each a
/// whole number of bytes, so that one block (``chunk``) can be sent again and again: about
/// 160 times smaller than what it inflates to, and endless if the server keeps sending.
enum GzipBomb {
    /// Back-references (length 258, distance 1) per chunk: 3 + 13 n + 7 bits is a whole number
    /// of bytes when n is 6 modulo 8.
    static let referencesPerChunk = 1_006
    /// Back-references in the first block, after its literal zero: 3 + 8 + 13 n + 7 bits.
    static let referencesInStart = 6

    /// The gzip header and a first block: a literal zero, then back-references.
    static let start: [UInt8] = {
        var bits = BitWriter()
        bits.write(0, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE: fixed Huffman codes
        bits.writeCode(0b0011_0000, length: 8)  // the literal 0
        for _ in 0..<referencesInStart { bits.writeReference() }
        bits.writeCode(0, length: 7)  // end of block
        return [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF] + bits.bytes
    }()

    /// One block of back-references, a whole number of bytes.
    static let chunk: [UInt8] = {
        var bits = BitWriter()
        bits.write(0, count: 1)
        bits.write(1, count: 2)
        for _ in 0..<referencesPerChunk { bits.writeReference() }
        bits.writeCode(0, length: 7)
        return bits.bytes
    }()

    /// What ``start`` and `chunks` chunks inflate to.
    static func inflatedSize(chunks: Int) -> Int {
        1 + 258 * (referencesInStart + chunks * referencesPerChunk)
    }

    /// An empty final block and the gzip trailer (CRC-32 and size) after ``start`` and
    /// `chunks` chunks.
    static func end(chunks: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)
        bits.write(1, count: 2)
        bits.writeCode(0, length: 7)
        let size = inflatedSize(chunks: chunks)
        let crc = crc32(zeros: size)
        return bits.bytes + (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) }
            + (0..<4).map { UInt8(truncatingIfNeeded: UInt32(size) >> (8 * $0)) }
    }

    /// The CRC-32 (ISO 3309) of `count` zero bytes.
    static func crc32(zeros count: Int) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for _ in 0..<count {
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// Deflate's bit order: values from their lowest bit, Huffman codes from their highest.
    struct BitWriter {
        var bytes: [UInt8] = []
        var used = 8

        mutating func write(_ value: UInt32, count: Int) {
            for index in 0..<count {
                if used == 8 {
                    bytes.append(0)
                    used = 0
                }
                bytes[bytes.count - 1] |= UInt8((value >> UInt32(index)) & 1) << UInt8(used)
                used += 1
            }
        }

        mutating func writeCode(_ code: UInt32, length: Int) {
            for index in (0..<length).reversed() { write((code >> UInt32(index)) & 1, count: 1) }
        }

        /// Length 258 (code 285, no extra bits), distance 1 (code 0, no extra bits).
        mutating func writeReference() {
            writeCode(0b1100_0101, length: 8)
            writeCode(0, length: 5)
        }
    }
}
