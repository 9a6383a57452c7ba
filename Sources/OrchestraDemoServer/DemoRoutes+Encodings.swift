import Foundation
import HTTPTypes
import Hummingbird

/// Routes for compressed and large bodies (issue 35): `/gzip` and `/deflate` (httpbin's names
/// and answers), `/gzip/zeros/:bytes` (a small gzip body that inflates to that many zeros: a
/// bomb, for the decoded limit), and `/large/:bytes` (that many bytes, streamed, never held).
extension DemoRoutes {
    /// The most bytes `/large` sends: 16 GiB.
    static let maximumLargeBody = 16 << 30
    /// The most bytes `/gzip/zeros` inflates to: 1 GiB.
    static let maximumZeros = 1 << 30

    static func addEncodingRoutes(to router: Router<BasicRequestContext>) {
        router.get("/gzip") { request, _ -> Response in
            encoded(try await echo(request, flag: "gzipped"), as: "gzip", DemoCompression.gzip)
        }
        router.get("/deflate") { request, _ -> Response in
            encoded(try await echo(request, flag: "deflated"), as: "deflate", DemoCompression.zlib)
        }
        router.get("/gzip/zeros/:bytes") { _, context -> Response in
            let bytes = try context.parameters.require("bytes", as: Int.self)
            // The trailer's CRC of the zeros costs a pass over them (about 2 s a GiB).
            guard (1...maximumZeros).contains(bytes) else {
                throw HTTPError(.badRequest, message: "bytes must be 1…1 GiB, got \(bytes)")
            }
            let chunks = max(0, (bytes - DemoCompression.inflatedSize(chunks: 0)) / DemoCompression.inflatedPerChunk)
            let head = ByteBuffer(bytes: DemoCompression.zerosStart)
            let chunk = ByteBuffer(bytes: DemoCompression.zerosChunk)
            let end = ByteBuffer(bytes: DemoCompression.zerosEnd(chunks: chunks))
            return Response(
                status: .ok,
                headers: [.contentType: "application/octet-stream", .contentEncoding: "gzip"],
                body: ResponseBody { writer in
                    try await writer.write(head)
                    for _ in 0..<chunks { try await writer.write(chunk) }
                    try await writer.write(end)
                    try await writer.finish(nil)
                })
        }
        router.get("/large/:bytes") { _, context -> Response in
            let bytes = try context.parameters.require("bytes", as: Int.self)
            guard (0...maximumLargeBody).contains(bytes) else {
                throw HTTPError(.badRequest, message: "bytes must be 0…16 GiB, got \(bytes)")
            }
            let block = ByteBuffer(repeating: UInt8(ascii: "x"), count: 256 << 10)
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(contentLength: bytes) { writer in
                    var left = bytes
                    while left > 0 {
                        let count = min(left, block.readableBytes)
                        try await writer.write(
                            count == block.readableBytes ? block : block.getSlice(at: 0, length: count)!)
                        left -= count
                    }
                    try await writer.finish(nil)
                })
        }
    }

    /// httpbin's answer to `/gzip` and `/deflate`: the request's method and headers, and `flag: true`.
    private static func echo(_ request: Request, flag: String) async throws -> [UInt8] {
        var headers: [String: String] = [:]
        // Title-Case names, as httpbin shows them (`Accept-Encoding`), whatever case was sent.
        for field in request.headers {
            let name = field.name.canonicalName.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }
                .joined(separator: "-")
            headers[name] = headers[name].map { "\($0),\(field.value)" } ?? field.value
        }
        let object: [String: Any] = [flag: true, "method": request.method.rawValue, "headers": headers]
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    private static func encoded(_ body: [UInt8], as encoding: String, _ encode: ([UInt8]) -> [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .contentEncoding: encoding],
            body: .init(byteBuffer: ByteBuffer(bytes: encode(body))))
    }
}

/// gzip and zlib streams written without a compressor: stored blocks for any bytes, and blocks
/// of back-references for zeros (a stream about 160 times smaller than what it inflates to).
package enum DemoCompression {
    /// `bytes` as a gzip stream of stored blocks.
    package static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF] + stored(bytes) + littleEndian(crc32(bytes))
            + littleEndian(UInt32(truncatingIfNeeded: bytes.count))
    }

    /// `bytes` as a zlib stream (HTTP's `deflate`) of stored blocks.
    package static func zlib(_ bytes: [UInt8]) -> [UInt8] {
        let adler = adler32(bytes)
        return [0x78, 0x01] + stored(bytes) + (0..<4).reversed().map { UInt8(truncatingIfNeeded: adler >> (8 * $0)) }
    }

    /// Deflate stored blocks of at most 65,535 bytes, the last one final.
    static func stored(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let final: UInt8 = offset + count == bytes.count ? 1 : 0
            output.append(final)
            output += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            output += bytes[offset..<(offset + count)]
            offset += count
        } while offset < bytes.count
        return output
    }

    /// Back-references (length 258, distance 1) per chunk: 3 + 13 n + 7 bits is a whole number
    /// of bytes when n is 6 modulo 8.
    static let referencesPerChunk = 1_006
    /// Back-references in the first block, after its literal zero.
    static let referencesInStart = 6
    static let inflatedPerChunk = 258 * referencesPerChunk

    /// The gzip header and a first block: a literal zero, then back-references.
    package static let zerosStart: [UInt8] = {
        var bits = BitWriter()
        bits.write(0, count: 1)
        bits.write(1, count: 2)
        bits.writeCode(0b0011_0000, length: 8)
        for _ in 0..<referencesInStart { bits.writeReference() }
        bits.writeCode(0, length: 7)
        return [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF] + bits.bytes
    }()

    /// One block of back-references, a whole number of bytes.
    package static let zerosChunk: [UInt8] = {
        var bits = BitWriter()
        bits.write(0, count: 1)
        bits.write(1, count: 2)
        for _ in 0..<referencesPerChunk { bits.writeReference() }
        bits.writeCode(0, length: 7)
        return bits.bytes
    }()

    /// What ``zerosStart`` and `chunks` chunks inflate to.
    package static func inflatedSize(chunks: Int) -> Int {
        1 + 258 * (referencesInStart + chunks * referencesPerChunk)
    }

    /// An empty final block and the gzip trailer after ``zerosStart`` and `chunks` chunks.
    package static func zerosEnd(chunks: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)
        bits.write(1, count: 2)
        bits.writeCode(0, length: 7)
        let size = inflatedSize(chunks: chunks)
        return bits.bytes + littleEndian(crc32(zeros: size)) + littleEndian(UInt32(truncatingIfNeeded: size))
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    /// The CRC-32 (ISO 3309) of `bytes`.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        ~bytes.reduce(UInt32(0xFFFF_FFFF)) { crc, byte in table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    }

    /// The CRC-32 of `count` zero bytes (the CRC of zeros repeats no faster: computed once per
    /// size, a few milliseconds per megabyte).
    static func crc32(zeros count: Int) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for _ in 0..<count { crc = table[Int(crc & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
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
