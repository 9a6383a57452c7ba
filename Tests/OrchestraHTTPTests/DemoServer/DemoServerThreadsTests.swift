import Foundation
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The demo server embedded in a busy process: its handlers run on threads of its own, so it
/// answers while the process's tasks hold every thread of the shared pool (in a full test run,
/// synchronous tests held them for 28 s, and examples run against an embedded server timed out).
@Suite("Demo server: threads of its own", .timeLimit(.minutes(1)), .takesTurns)
struct DemoServerThreadsTests {
    /// Holds threads of the shared pool until released: each holder blocks the thread it runs on
    /// (for at most a minute, the suite's limit).
    struct PoolHolders {
        let started = ThreadCounter()
        let released = ThreadCounter()

        /// Starts `count` detached tasks (on the shared pool) that block until ``release()``.
        func hold(_ count: Int) {
            for _ in 0..<count {
                Task.detached { [started, released] in
                    started.add()
                    released.wait(untilAtLeast: 1, seconds: 60)
                }
            }
        }

        /// Waits (this thread, at most `seconds`) until `count` holders run; whether they do.
        func waitUntilStarted(_ count: Int, seconds: TimeInterval) -> Bool {
            started.wait(untilAtLeast: count, seconds: seconds)
        }

        func release() { released.add() }
    }

    @Test(.ownThread)
    func anEmbeddedServerAnswersWhileEveryThreadOfTheSharedPoolIsHeld() async throws {
        try await withDemoServer { server in
            // The shared pool has a thread per core (Linux and Apple platforms alike). The other
            // tests of the run use it too: holders that do not all start within 2 s are let go
            // (a synchronous test may hold a thread for seconds, and the pool must not stall
            // that long), and the test tries again.
            let width = ProcessInfo.processInfo.activeProcessorCount
            var holders = PoolHolders()
            var tries = 1
            holders.hold(width)
            while !holders.waitUntilStarted(width, seconds: 2) {
                holders.release()
                try #require(tries < 10, "the pool's \(width) threads were not all free at once in \(tries) tries")
                tries += 1
                holders = PoolHolders()
                holders.hold(width)
            }
            defer { holders.release() }
            // A task queued now cannot run until the holders let go: the pool is full.
            let probe = Locked(false)
            Task.detached { probe.withLock { $0 = true } }

            // This test's thread asks, blocking (no task of the pool involved), at most 10 s.
            let answer = try blockingGet(port: server.port, path: "/echo/answered", seconds: 10)

            #expect(!probe.withLock { $0 }, "a task of the pool ran: the pool was not full, so this proves nothing")
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
            #expect(answer.hasSuffix("answered"), "\(answer.suffix(200))")
        }
    }

    @Test func theCommandsServerOfItsOwnProcessRunsOnThePoolAndTheDefaultIsTwoThreads() {
        #expect(DemoServer.Configuration().threads == 2)
        #expect(DemoServer.Configuration(threads: 0).threads == 0)
    }
}

/// `GET path` from 127.0.0.1:`port` over a blocking socket (reads and writes time out after
/// `seconds`), `Connection: close`: the whole response as text.
private func blockingGet(port: Int, path: String, seconds: Int) throws -> String {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw TestError("socket: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw TestError("connect: errno \(errno)") }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    guard send(fd, request, request.count, 0) == request.count else { throw TestError("send: errno \(errno)") }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4_096)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count == 0 { break }
        guard count > 0 else {
            throw TestError("no answer within \(seconds) s (errno \(errno)); so far: \(response.count) bytes")
        }
        response += buffer[0..<count]
    }
    return String(decoding: response, as: UTF8.self)
}
