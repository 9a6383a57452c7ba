import DurableStoreTestSupport
import Foundation
import Logging
import Orchestra
import OrchestraTestKit
import PostgresNIO
import TestSupport
import Testing

@testable import OrchestraPostgres

#if canImport(Glibc)
import Glibc
private let systemClose = Glibc.close
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemClose = Darwin.close
private let systemRead = Darwin.read
#endif

/// `RequestedReadsOnly`, the handler that keeps PostgresNIO from crashing the process when a
/// server closes a connection while a result is read slowly: its rule on a channel of its
/// own, then PostgresNIO over a server that closes so, then the store's connections.
@Suite("PostgreSQL connections: reads only when asked", .timeLimit(.minutes(1)), .takesTurns)
struct RequestedReadsOnlyTests {
    @Test func aReadThatWasAskedForPassesWithItsEnd() throws {
        let (channel, seen) = try Self.guardedChannel()
        // Added to a connection at rest, which is always read from.
        try channel.fireRead("reply")
        #expect(seen.events == ["reply", "end"])
        channel.read()
        try channel.fireRead("more")
        #expect(seen.events == ["reply", "end", "more", "end"])
    }

    @Test func whatComesUnaskedWaitsForARead() throws {
        let (channel, seen) = try Self.guardedChannel()
        try channel.fireRead("rows")
        // Not asked again (PostgresNIO holds its read while its reader has rows to take).
        try channel.fireRead("unasked")
        #expect(seen.events == ["rows", "end"])
        channel.read()
        #expect(seen.events == ["rows", "end", "unasked", "end"])
    }

    @Test func whatCameUnaskedIsDroppedWhenTheChannelCloses() throws {
        let (channel, seen) = try Self.guardedChannel()
        try channel.fireRead("rows")
        try channel.fireRead("rest")
        // The end of the read at the peer's close, which brought nothing.
        channel.pipeline.fireChannelReadComplete()
        _ = try channel.finish()
        #expect(seen.events == ["rows", "end", "closed"])
    }

    @Test func theEndOfAnEmptyReadPassesWhileAReadIsAsked() throws {
        let (channel, seen) = try Self.guardedChannel()
        channel.pipeline.fireChannelReadComplete()
        try channel.fireRead("reply")
        #expect(seen.events == ["end", "reply", "end"])
    }

    /// PostgresNIO itself over a server that sends part of a result and closes the
    /// connection while the reader has not taken it: without the handler, the process stops
    /// ("How can we receive a body part, after a channelReadComplete, but no read has been
    /// forwarded yet"); with it, reading the result fails as on any lost connection.
    @Test(.enabled(if: ExitTests.areEnabled))
    func aServerThatClosesWhileAResultIsHeldEndsTheQueryNotTheProcess() async {
        await #expect(processExitsWith: .success) {
            try await withHangGuard(.seconds(30)) { try await Self.readAResultItsServerCloses() }
        }
    }

    @Test(.enabled(if: PostgresTestServer.url != nil, Comment(rawValue: PostgresTestServer.skipMessage)))
    func theStoresConnectionsAreGuarded() async throws {
        try await withTemporaryStore(.postgres) { file in
            let store = try file.postgresStore(tries: .init())
            try await store.migrate()
            let guarded = try await store.read { connection in
                let channel = try #require(Mirror(reflecting: connection).descendant("channel") as? any Channel)
                return try await channel.eventLoop.submit {
                    (try? channel.pipeline.syncOperations.handler(type: RequestedReadsOnly.self)) != nil
                }.get()
            }
            #expect(guarded)
        }
    }

    /// In the exit test's process: one query on a guarded connection to a ``ClosingServer``.
    static func readAResultItsServerCloses() async throws {
        let server = try ClosingServer()
        let logger = Logger(label: "test")
        let client = PostgresClient(
            configuration: .init(
                host: "127.0.0.1", port: server.port, username: "test", password: nil, database: "test",
                tls: .disable),
            backgroundLogger: logger)
        let running = Task { await client.run() }
        defer { running.cancel() }
        try await client.withConnection { connection in
            guard await PostgresJobStore.guardReads(of: connection, logger: logger) else {
                throw ClosingServer.Failure("the connection was not guarded")
            }
            let rows = try await connection.query("SELECT x", logger: logger)
            // The rows the server sent with the result's start are in; none is taken.
            server.close()
            try? await connection.closeFuture.get()
            var taken = 0
            do {
                for try await _ in rows { taken += 1 }
            } catch {
                guard taken <= ClosingServer.rowsSent else {
                    throw ClosingServer.Failure("\(taken) rows read, \(ClosingServer.rowsSent) sent")
                }
                return
            }
            throw ClosingServer.Failure("the result ended without an error though its server closed mid-result")
        }
    }

    /// A channel with `RequestedReadsOnly` and, after it, a handler that records what reaches it.
    static func guardedChannel() throws -> (EmbeddedChannel, Recorder) {
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([RequestedReadsOnly(), recorder])
        return (channel, recorder)
    }

    /// Records the reads, their ends and the close that reach it, as PostgresNIO's handler
    /// would see them.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var events: [String] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            events.append(String(buffer: unwrapInboundIn(data)))
        }
        func channelReadComplete(context: ChannelHandlerContext) { events.append("end") }
        func channelInactive(context: ChannelHandlerContext) { events.append("closed") }
    }
}

extension EmbeddedChannel {
    /// One read from the socket: `text`, then the read's end.
    fileprivate func fireRead(_ text: String) throws {
        pipeline.fireChannelRead(ByteBuffer(string: text))
        pipeline.fireChannelReadComplete()
    }
}

/// A PostgreSQL server for one connection and one query: it answers the start of the query
/// with its first rows, then, when told to, closes the connection without the rest.
final class ClosingServer: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static let rowsSent = 3
    let port: Int
    private let listener: Int32
    private let closing = DispatchSemaphore(value: 0)

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 1) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            _ = systemClose(descriptor)
            throw Failure("no listening socket: errno \(errno)")
        }
        (listener, port) = (descriptor, Int(UInt16(bigEndian: address.sin_port)))
        let closing = self.closing
        // Blocking reads on a thread of its own, not the concurrency pool's.
        Thread.detachNewThread { Self.serve(descriptor, closing) }
    }

    /// Closes the connection (without the result's end).
    func close() { closing.signal() }

    private static func serve(_ listener: Int32, _ closing: DispatchSemaphore) {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        defer {
            _ = systemClose(connection)
            _ = systemClose(listener)
        }
        // The startup message: its length, then the rest.
        guard let length = read(connection, 4).map({ int32($0) }), read(connection, Int(length) - 4) != nil else {
            return
        }
        send(
            connection,
            message("R", int32(0)) + message("K", int32(1) + int32(2)) + message("Z", Array("I".utf8)))
        // Parse, Describe, Bind, Execute, up to Sync.
        while let header = read(connection, 5) {
            guard read(connection, Int(int32(Array(header[1...]))) - 4) != nil else { return }
            if header[0] == UInt8(ascii: "S") { break }
        }
        // ParseComplete, ParameterDescription, RowDescription (one text column), BindComplete,
        // the first rows: one write, so one read takes them.
        let column = Array("x".utf8) + [0] + int32(0) + int16(0) + int32(25) + int16(-1) + int32(-1) + int16(0)
        var reply = message("1", []) + message("t", int16(0)) + message("T", int16(1) + column) + message("2", [])
        for _ in 0..<rowsSent { reply += message("D", int16(1) + int32(3) + Array("row".utf8)) }
        send(connection, reply)
        _ = closing.wait(timeout: .now() + 30)
    }

    private static func message(_ type: Character, _ body: [UInt8]) -> [UInt8] {
        [type.asciiValue!] + int32(Int32(body.count + 4)) + body
    }
    private static func int32(_ value: Int32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
    private static func int16(_ value: Int16) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
    private static func int32(_ bytes: [UInt8]) -> Int32 { bytes.prefix(4).reduce(0) { $0 << 8 | Int32($1) } }

    private static func read(_ connection: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: max(count, 0))
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { systemRead(connection, $0.baseAddress! + done, count - done) }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }

    private static func send(_ connection: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress!, $0.count) }
    }
}
