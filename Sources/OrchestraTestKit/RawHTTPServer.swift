import Foundation
import Orchestra

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A server on 127.0.0.1 that answers each request with exactly the bytes a test gives it: for
/// testing what a client does with a server that misbehaves on purpose (a header no HTTP
/// library would send, a negative or huge `Content-Length`, an endless body, a gzip bomb, a
/// flood of cookies, an echo of a secret).
///
/// ```swift
/// try await withRawHTTPServer({ request in
///     .response(status: 503, headers: [("Retry-After", "9223372036854775807")], body: "busy")
/// }) { server in
///     let url = server.url("/x")          // http://127.0.0.1:PORT/x
///     …
///     #expect(server.requests.count == 1)
/// }
/// ```
///
/// Each connection is served on a thread of its own with blocking sockets: test support only,
/// never a pattern for the libraries. A connection serves one request, then closes (the
/// replies built by ``Reply/response(status:reason:headers:body:)`` say `Connection: close`).
/// Every wait is bounded: a client that sends nothing is dropped after 10 s, and a streamed
/// reply stops at its limit or when the client goes away.
package final class RawHTTPServer: Sendable {
    /// A request as received: its request line, its header fields in order, and its body
    /// (read by `Content-Length` or chunked framing, at most 64 MB).
    package struct Request: Sendable {
        package var method: String
        /// The request target as sent: `/path?query`.
        package var target: String
        package var headers: [(name: String, value: String)]
        package var body: [UInt8]

        /// The value of the first field named `name`, in any case.
        package func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// The body as UTF-8 text.
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// What the server writes back.
    package enum Reply: Sendable {
        /// Exactly these bytes, then the connection closes.
        case raw([UInt8])
        /// `head`, then `chunk` again and again until `limit` bytes of chunks are written or the
        /// client closes the connection: an endless body, bounded so that a broken client
        /// cannot keep the test running.
        case stream(head: [UInt8], chunk: [UInt8], limit: Int)
        /// Accept the request, answer nothing, and close after `seconds` (or when the server
        /// stops): a server that never answers.
        case silence(seconds: Int)

        /// A response with the given status, fields (in order, written as they are: any name,
        /// any value, duplicates kept) and body. `Content-Length` and `Connection: close` are
        /// added unless `headers` has them.
        package static func response(
            status: Int, reason: String = "Status", headers: [(String, String)] = [], body: some Sequence<UInt8>
        ) -> Reply {
            let body = Array(body)
            var head = "HTTP/1.1 \(status) \(reason)\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            let names = Set(headers.map { $0.0.lowercased() })
            if !names.contains("content-length") && !names.contains("transfer-encoding") {
                head += "Content-Length: \(body.count)\r\n"
            }
            if !names.contains("connection") { head += "Connection: close\r\n" }
            head += "\r\n"
            return .raw(Array(head.utf8) + body)
        }

        /// ``response(status:reason:headers:body:)`` with a text body.
        package static func response(
            status: Int, reason: String = "Status", headers: [(String, String)] = [], body: String = ""
        ) -> Reply {
            response(status: status, reason: reason, headers: headers, body: Array(body.utf8))
        }
    }

    package typealias Handler = @Sendable (Request) -> Reply

    private struct State {
        var requests: [Request] = []
        var connections: Set<Int32> = []
        var stopped = false
    }

    private let listener: Int32
    /// The port it listens on, on 127.0.0.1.
    package let port: Int
    private let handler: Handler
    private let state = Locked(State())
    private let acceptThreadDone = AsyncEvent()

    /// Starts listening on 127.0.0.1 on a free port and serving with `handler`.
    package init(_ handler: @escaping Handler) throws {
        self.handler = handler
        let fd = socket(AF_INET, Self.streamType, 0)
        guard fd >= 0 else { throw RawHTTPServerError("socket", errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw RawHTTPServerError("bind/listen", code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in
            acceptLoop()
            acceptThreadDone.signal()
        }
        thread.start()
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    package func url(_ path: String = "/") -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// The requests received so far, in the order their heads were read.
    package var requests: [Request] {
        state.withLock { $0.requests }
    }

    /// Stops accepting, closes every connection and waits (at most 10 s) for the accepting
    /// thread to end. Called by ``withRawHTTPServer(_:_:)`` on every path.
    package func stop() async {
        let open = state.withLock { state -> Set<Int32> in
            state.stopped = true
            return state.connections
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for connection in open { shutdown(connection, Int32(SHUT_RDWR)) }
        // Wakes the accept call on systems where shutting the listener down does not.
        if let wake = try? Self.connectToSelf(port: port) { close(wake) }
        _ = try? await withTimeout(.seconds(10)) { try await self.acceptThreadDone.wait() }
        close(listener)
    }

    // MARK: - Serving

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if state.withLock({ $0.stopped }) {
                if connection >= 0 { close(connection) }
                return
            }
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            #if canImport(Darwin)
            var yes: Int32 = 1
            setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
            #endif
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            state.withLock { _ = $0.connections.insert(connection) }
            let thread = Thread { [self] in
                serve(connection)
                state.withLock { _ = $0.connections.remove(connection) }
                close(connection)
            }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        guard let request = Self.readRequest(connection) else { return }
        state.withLock { $0.requests.append(request) }
        switch handler(request) {
        case .raw(let bytes):
            _ = Self.write(connection, bytes)
            shutdown(connection, Int32(SHUT_WR))
            Self.drain(connection)
        case .stream(let head, let chunk, let limit):
            guard Self.write(connection, head) else { return }
            var written = 0
            while written < limit, !chunk.isEmpty, !state.withLock({ $0.stopped }) {
                let part = limit - written >= chunk.count ? chunk : Array(chunk.prefix(limit - written))
                guard Self.write(connection, part) else { return }
                written += part.count
            }
            shutdown(connection, Int32(SHUT_WR))
        case .silence(let seconds):
            var timeout = timeval(tv_sec: max(seconds, 0), tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            Self.drain(connection)
        }
    }

    /// Reads until the client closes its side or the receive timeout passes, so that closing
    /// does not reset a connection whose client is still sending.
    private static func drain(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while recv(connection, &buffer, buffer.count, 0) > 0 {}
    }

    private static let maximumHead = 1 << 20
    private static let maximumBody = 64 << 20

    private static func readRequest(_ connection: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var headEnd: Int?
        while headEnd == nil {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            let searchFrom = max(0, data.count - 3)
            data.append(contentsOf: buffer[..<count])
            headEnd = find([13, 10, 13, 10], in: data, from: searchFrom)
            if headEnd == nil, data.count > maximumHead { return nil }
        }
        let end = headEnd!
        let head = String(decoding: data[..<end], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", maxSplits: 2).map(String.init)
        guard requestLine.count >= 2 else { return nil }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var request = Request(method: requestLine[0], target: requestLine[1], headers: headers, body: [])
        var rest = Array(data[(end + 4)...])
        if let length = request.header("Content-Length").flatMap(Int.init), length > 0 {
            let wanted = min(length, maximumBody)
            while rest.count < wanted {
                let count = recv(connection, &buffer, min(buffer.count, wanted - rest.count), 0)
                guard count > 0 else { break }
                rest.append(contentsOf: buffer[..<count])
            }
            request.body = Array(rest.prefix(wanted))
        } else if request.header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
            while find(Array("0\r\n\r\n".utf8), in: rest, from: max(0, rest.count - 5 - 65_536)) == nil,
                rest.count < maximumBody
            {
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                rest.append(contentsOf: buffer[..<count])
            }
            request.body = dechunk(rest)
        }
        return request
    }

    /// The payload of a chunked body (extensions and trailers ignored).
    private static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        var index = 0
        while let lineEnd = find([13, 10], in: bytes, from: index) {
            let sizeText =
                String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                .split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard let size = Int(sizeText, radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            guard start + size <= bytes.count else { break }
            body.append(contentsOf: bytes[start..<(start + size)])
            index = start + size + 2
        }
        return body
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], Array(haystack[index..<(index + needle.count)]) == needle {
                return index
            }
            index += 1
        }
        return nil
    }

    /// Writes all of `bytes`; false when the client went away.
    private static func write(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, sendFlags) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    private static func connectToSelf(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, streamType, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return fd
    }

    #if canImport(Darwin)
    private static let streamType = SOCK_STREAM
    private static let sendFlags: Int32 = 0
    #else
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif
}

/// A socket call of ``RawHTTPServer`` failed.
package struct RawHTTPServerError: Error, CustomStringConvertible {
    package var description: String

    init(_ call: String, _ code: Int32) {
        description = "RawHTTPServer: \(call) failed: \(String(cString: strerror(code)))"
    }
}

/// Runs `body` with a ``RawHTTPServer`` serving `handler`, and stops the server on every path.
package func withRawHTTPServer<T>(
    _ handler: @escaping RawHTTPServer.Handler, _ body: (RawHTTPServer) async throws -> T
) async throws -> T {
    let server = try RawHTTPServer(handler)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
