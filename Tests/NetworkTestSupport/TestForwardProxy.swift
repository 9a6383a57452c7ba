import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A forward proxy on 127.0.0.1, as a company network has: `CONNECT host:port` opens a tunnel,
/// an absolute-form request (`GET http://host:port/path`) is passed on in origin form. With
/// `credentials` (`user:password`) it answers `407` to a request without them. It records
/// each request it gets (method, target, `Proxy-Authorization`).
///
/// Test support: a thread per connection, blocking sockets, every read bounded by 10 s.
package final class TestForwardProxy: @unchecked Sendable {
    // @unchecked: `listener` is set once in init; `seen` is behind its lock.
    package struct Seen: Sendable, Equatable {
        package var method: String
        package var target: String
        package var authorization: String?
    }

    package let port: Int
    private let listener: Int32
    private let credentials: String?
    private let lock = NSLock()
    private var seen: [Seen] = []

    /// The requests received so far.
    package var requests: [Seen] { lock.withLock { seen } }

    /// The proxy's URL (`http://127.0.0.1:PORT`, or with `user:password@`).
    package var url: String {
        "http://\(credentials.map { "\($0)@" } ?? "")127.0.0.1:\(port)"
    }

    /// Runs `body` with a proxy, then stops it.
    package static func with<T: Sendable>(
        credentials: String? = nil, _ body: (TestForwardProxy) async throws -> T
    ) async throws -> T {
        let proxy = try TestForwardProxy(credentials: credentials)
        defer { proxy.stop() }
        return try await body(proxy)
    }

    private init(credentials: String?) throws {
        self.credentials = credentials
        let (socket, port) = try Self.listen()
        listener = socket
        self.port = port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    private func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            Self.bound(client)
            Thread.detachNewThread { [self] in serve(client) }
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        guard let (head, rest) = Self.readHead(client) else { return }
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count == 3 else { return }
        let method = String(parts[0])
        let target = String(parts[1])
        let authorization = lines.dropFirst().first { $0.lowercased().hasPrefix("proxy-authorization:") }.map {
            String($0.dropFirst("proxy-authorization:".count)).trimmingCharacters(in: .whitespaces)
        }
        lock.withLock { seen.append(Seen(method: method, target: target, authorization: authorization)) }
        if let credentials, authorization != "Basic " + Data(credentials.utf8).base64EncodedString() {
            Self.send(
                client,
                "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\n"
                    + "Content-Length: 0\r\nConnection: close\r\n\r\n")
            return
        }
        if method == "CONNECT" {
            guard let upstream = Self.connect(to: target) else {
                Self.send(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
            Self.send(client, "HTTP/1.1 200 Connection established\r\n\r\n")
            Self.pump(client, upstream, initial: rest)
            return
        }
        guard let url = URLComponents(string: target), let host = url.host, let port = url.port ?? 80 as Int?,
            let upstream = Self.connect(to: "\(host):\(port)")
        else {
            Self.send(client, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        }
        let path =
            (url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath)
            + (url.percentEncodedQuery.map { "?\($0)" } ?? "")
        let headers = lines.dropFirst().filter { !$0.lowercased().hasPrefix("proxy-") && !$0.isEmpty }
        let forwarded = "\(method) \(path) \(parts[2])\r\n" + headers.joined(separator: "\r\n") + "\r\n\r\n"
        Self.pump(client, upstream, initial: Array(forwarded.utf8) + rest)
    }

    /// Copies bytes both ways until one side closes; `initial` goes upstream first.
    private static func pump(_ client: Int32, _ upstream: Int32, initial: [UInt8]) {
        defer { close(upstream) }
        if !initial.isEmpty { write(upstream, initial) }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            copy(from: upstream, to: client)
            done.signal()
        }
        copy(from: client, to: upstream)
        _ = done.wait(timeout: .now() + 15)
    }

    private static func copy(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            write(destination, Array(buffer[0..<count]))
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    private static func readHead(_ socket: Int32) -> (String, [UInt8])? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count < 64 << 10 {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            data += buffer[0..<count]
            if let end = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                return (String(decoding: data[..<end.lowerBound], as: UTF8.self), Array(data[end.upperBound...]))
            }
        }
        return nil
    }

    private static func send(_ socket: Int32, _ text: String) { write(socket, Array(text.utf8)) }

    private static func write(_ socket: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Foundation.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// A connection to `host:port` (127.0.0.1 for `localhost`).
    private static func connect(to target: String) -> Int32? {
        guard let colon = target.lastIndex(of: ":"), let port = UInt16(target[target.index(after: colon)...]) else {
            return nil
        }
        var host = String(target[..<colon])
        if host == "localhost" { host = "127.0.0.1" }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return nil }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            return nil
        }
        bound(socket)
        return socket
    }

    private static func listen() throws -> (Int32, Int) {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard socket >= 0, bound == 0, Foundation.listen(socket, 64) == 0 else {
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Every read on `socket` gives up after 10 s.
    private static func bound(_ socket: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}
