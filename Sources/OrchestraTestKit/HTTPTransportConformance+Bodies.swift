import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

/// The checks of compressed and streamed bodies (issue 35).
extension HTTPTransportConformance {
    func checkDecoding() async throws {
        for (path, flag) in [("/gzip", "gzipped"), ("/deflate", "deflated")] {
            let (response, data) = try await catching(.compressedBodiesAreDecoded) {
                try await transport.send(request(.get, path), body: nil)
            }
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            try require(
                .compressedBodiesAreDecoded, response.status.code == 200 && object?[flag] as? Bool == true,
                expected: "\(path) decoded to JSON with \"\(flag)\": true",
                actual: "\(response.status.code), \(data.count) bytes: \(data.prefix(16).map { String($0, radix: 16) })"
            )
        }
    }

    func checkDecodedLimit() async throws {
        let body = HTTPResponseBodyHandling(maximumSize: 1 << 20)
        do {
            let (response, data) = try await transport.send(
                request(.get, "/gzip/zeros/\(4 << 20)"), content: nil, receiving: body, progress: nil, timeout: nil)
            throw failure(.decodedBodiesAreLimited, actual: "a \(response.status.code) response of \(data.count) bytes")
        } catch let error as HTTPTransportError where error.code == .responseTooLarge {
            return
        } catch let error as HTTPTransportConformanceFailure {
            throw error
        } catch let error as CancellationError where Task.isCancelled {
            throw error
        } catch {
            throw failure(.decodedBodiesAreLimited, actual: "\(type(of: error)): \(error)")
        }
    }

    func checkSink() async throws {
        let size = 8 << 20
        let sink = CountingSink()
        let (response, data) = try await catching(.bodiesStreamToASink) {
            try await transport.send(
                request(.get, "/large/\(size)"), content: nil, receiving: .init(sink: sink, maximumSize: 1 << 20),
                progress: nil, timeout: nil)
        }
        let counts = sink.counts.withLock { $0 }
        try require(
            .bodiesStreamToASink, response.status.code == 200 && data.isEmpty,
            expected: "a 200 response with an empty body", actual: "\(response.status.code), \(data.count) bytes")
        try require(
            .bodiesStreamToASink, counts.begins == 1 && counts.bytes == size && counts.largest < size,
            expected: "one begin, then \(size) bytes in parts smaller than the body",
            actual: "\(counts.begins) begins, \(counts.bytes) bytes, largest part \(counts.largest)")
    }

    func checkAsSent() async throws {
        do {
            let (response, data) = try await transport.send(
                request(.get, "/gzip"), content: nil, receiving: .init(decompresses: false), progress: nil,
                timeout: nil)
            try require(
                .bodiesAsSentWhenAsked, response.status.code == 200 && data.prefix(2) == Data([0x1F, 0x8B]),
                expected: "the gzip body as sent",
                actual: "\(response.status.code), first bytes \(Array(data.prefix(2)))")
        } catch let error as HTTPTransportError where error.code == .invalidRequest {
            return
        } catch let error as HTTPTransportConformanceFailure {
            throw error
        } catch let error as CancellationError where Task.isCancelled {
            throw error
        } catch {
            throw failure(.bodiesAsSentWhenAsked, actual: "\(type(of: error)): \(error)")
        }
    }
}

extension HTTPTransportConformance {
    func checkProxy() async throws {
        guard let proxiedRequests else {
            throw failure(
                .goesThroughItsProxy,
                actual: "no proxiedRequests: make the transport with a proxy and set proxiedRequests to its count")
        }
        let before = proxiedRequests()
        let (response, _) = try await send(
            .goesThroughItsProxy, request(.get, "/get"), expected: "a 200 through the proxy")
        let after = proxiedRequests()
        try require(
            .goesThroughItsProxy, response.status.code == 200 && after > before,
            expected: "a 200 response, and the proxy's count up by one",
            actual: "\(response.status.code), the proxy's count \(before) → \(after)")
    }
}

/// Counts what a transport hands it.
private final class CountingSink: HTTPResponseBodySink {
    struct Counts {
        var begins = 0
        var bytes = 0
        var largest = 0
    }

    let counts = Locked(Counts())

    func begin() throws {
        counts.withLock {
            $0.begins += 1
            $0.bytes = 0
        }
    }

    func write(_ part: UnsafeRawBufferPointer) throws {
        counts.withLock {
            $0.bytes += part.count
            $0.largest = max($0.largest, part.count)
        }
    }
}
