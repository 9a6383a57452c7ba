import Foundation
import HTTPTypes
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// What `URLSessionTransport` does to keep a response's memory and time at its limit on Linux
/// (the session waits for the delegate to take each part of the body, and the transfer is
/// paused at the limit), and that doing it loses, deadlocks and crashes nothing: requests
/// cancelled at any moment, cancelling each other, in sessions made and released each round.
@Suite(
    "URLSessionTransport: bounded bodies, and no lost request, hang or crash", .serialized, .timeLimit(.minutes(2)),
    .takesTurns)
struct URLSessionInlineDeliveryTests {
    /// A body the server keeps sending until the client stops reading.
    struct EndlessBody: CustomTestStringConvertible, Sendable {
        var name: String
        var head: [UInt8]
        var chunk: [UInt8]
        /// What the server sends at most, so that a broken client cannot keep the test running.
        var limit: Int
        var testDescription: String { name }
    }

    static let bodies = [
        // 8 MB of gzip that inflates to about 1.3 GB.
        EndlessBody(
            name: "gzip bomb", head: DecodedBodyLimitTests.head + DemoCompression.zerosStart,
            chunk: DemoCompression.zerosChunk,
            limit: 8 << 20),
        EndlessBody(
            name: "endless plain body",
            head: Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8),
            chunk: Array(repeating: UInt8(ascii: "x"), count: 64 << 10), limit: 512 << 20),
    ]

    /// Past the limit the request fails, and the transfer stops there: URLSession delivers
    /// (nearly) nothing more. Before, each 16 KB part was queued for the delegate as curl
    /// inflated it; the request failed once the delegate counted past the limit, but the
    /// cancellation waited for URLSession's queue, which curl held for as long as data kept
    /// coming: the whole body was read, inflated and queued (a 10 MB gzip body: 11 GB).
    @Test(arguments: bodies)
    func aBodyPastTheLimitStopsTheTransfer(_ body: EndlessBody) async throws {
        let reply: RawHTTPServer.Handler = { _ in .stream(head: body.head, chunk: body.chunk, limit: body.limit) }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport(maximumBodySize: 1 << 20)
            let request = HTTPRequest(method: .get, url: URL(string: server.url("/endless"))!)
            let error = await #expect(throws: HTTPTransportError.self) {
                try await transport.send(request, body: nil)
            }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.message == "the response from 127.0.0.1:\(server.port) is larger than 1048576 bytes")
            // The task's cancellation lands, and the transfer ends.
            try await waitUntil("the transfer ended") { transport.transfersInProgress == 0 }
            #if canImport(FoundationNetworking)
            // At most what curl had produced already when it was paused (nothing, in practice).
            #expect(transport.bytesReceivedAfterTheEnd <= 1 << 20, "\(transport.bytesReceivedAfterTheEnd) bytes")
            #endif
        }
    }

    /// The limit holds on every transfer of a transport when many bombs come at once, and
    /// the transport still works afterwards.
    @Test func concurrentBombsAndThenARequest() async throws {
        let reply: RawHTTPServer.Handler = { request in
            request.target == "/ok"
                ? .response(status: 200, body: Array("fine".utf8))
                : .stream(
                    head: DecodedBodyLimitTests.head + DemoCompression.zerosStart, chunk: DemoCompression.zerosChunk,
                    limit: 8 << 20)
        }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport(maximumBodySize: 1 << 20)
            let request = HTTPRequest(method: .get, url: URL(string: server.url("/bomb"))!)
            let codes = try await withThrowingTaskGroup(of: HTTPTransportError.Code?.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        do {
                            _ = try await transport.send(request, body: nil)
                            return nil
                        } catch let error as HTTPTransportError {
                            return error.code
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(codes == Array(repeating: .responseTooLarge, count: 8))
            try await waitUntil("the transfers ended") { transport.transfersInProgress == 0 }
            let (response, data) = try await transport.send(
                HTTPRequest(method: .get, url: URL(string: server.url("/ok"))!), body: nil)
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "fine")
        }
    }

    enum Sessions: String, CaseIterable, Sendable {
        case one = "one session for every round"
        case perRound = "a session per round, released after it"
    }

    /// Requests refused at once, cancelling each other (the first failure cancels the others
    /// of its group), round after round: each ends, with the refusal or `CancellationError`.
    /// With the callbacks inline and the continuations resumed there, this deadlocked within a
    /// few rounds: a cancellation handler (which holds its task's lock) waited in
    /// `URLSessionTask.cancel()` for URLSession's queue, where the completion of that task's
    /// request waited for the task's lock to resume it. Ending a request cancelled before its
    /// task started at once, and cancelling that task without resuming it, crashed the process
    /// in URLSession ("Trying to access a behaviour for a task that in not in the registry").
    @Test(arguments: Sessions.allCases)
    func refusedRequestsCancellingEachOther(_ sessions: Sessions) async throws {
        let unexpected = try await withHangGuard(.seconds(90)) {
            let shared = URLSessionTransport()
            var unexpected: [String] = []
            for round in 0..<150 {
                let transport = sessions == .one ? shared : URLSessionTransport()
                let errors = await withTaskGroup(of: (any Error)?.self) { group in
                    for path in ["a", "b", "c", "d"] {
                        group.addTask {
                            do {
                                _ = try await transport.send(
                                    HTTPRequest(method: .get, url: URL(string: "http://127.0.0.1:1/\(path)")!),
                                    body: nil)
                                return nil
                            } catch {
                                return error
                            }
                        }
                    }
                    var errors: [(any Error)?] = []
                    for await error in group {
                        errors.append(error)
                        if error != nil { group.cancelAll() }
                    }
                    return errors
                }
                for error in errors {
                    switch error {
                    case is CancellationError: break
                    case let error as HTTPTransportError where error.code == .connectionRefused: break
                    default: unexpected.append("round \(round): \(String(describing: error))")
                    }
                }
            }
            return unexpected
        }
        #expect(unexpected.isEmpty, "\(unexpected.prefix(5))")
    }

    /// Requests cancelled at any moment (before their task starts, while it connects, after it
    /// failed) end with `CancellationError` or their own error, and their tasks leave the
    /// session. Before, a request cancelled before it waited for its task could miss the task's
    /// completion (the delegate did not know the task yet) and wait forever: about 1 run of 5
    /// of this test hung.
    @Test func requestsCancelledAtAnyMoment() async throws {
        try await withHangGuard(.seconds(60)) {
            let transport = URLSessionTransport()
            for round in 0..<200 {
                let request = Task {
                    try await transport.send(
                        HTTPRequest(method: .get, url: URL(string: "http://127.0.0.1:1/\(round)")!), body: nil)
                }
                for _ in 0..<(round % 8) { await Task.yield() }
                request.cancel()
                do {
                    _ = try await request.value
                    Issue.record("round \(round): a refused request succeeded")
                } catch is CancellationError {
                } catch let error as HTTPTransportError where error.code == .connectionRefused {
                } catch {
                    Issue.record("round \(round): \(error)")
                }
            }
            try await waitUntil("every task left the session") { transport.transfersInProgress == 0 }
        }
    }

    #if canImport(FoundationNetworking)
    /// A 302 whose body keeps coming: Linux's URLSession holds a 301–308 body to itself.
    static let endlessRedirect: RawHTTPServer.Handler = { _ in
        .stream(
            head: Array("HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nConnection: close\r\n\r\n".utf8),
            chunk: Array(repeating: UInt8(ascii: "x"), count: 64 << 10), limit: 16 << 20)
    }

    static let redirectBodies = [
        EndlessBody(
            name: "endless 302 body",
            head: Array("HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nConnection: close\r\n\r\n".utf8),
            chunk: Array(repeating: UInt8(ascii: "x"), count: 64 << 10), limit: 16 << 20),
        // 8 MB of gzip that would inflate to about 1.3 GB.
        EndlessBody(
            name: "gzip bomb as a 302's body",
            head: Array(
                "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n"
                    .utf8) + DemoCompression.zerosStart,
            chunk: DemoCompression.zerosChunk, limit: 8 << 20),
    ]

    /// On Linux a 301–308 body past 1 MiB (whatever `maximumBodySize`) fails the request, and
    /// its transfer ends there. Before, URLSession held the body whole, gave the delegate none
    /// of it and copied it on every part, and the request waited until the server stopped: here
    /// at 16 MiB, after about 6 s of a core (the 302 then came back with it); from a server that
    /// never stops, never, past the request's timeout and its cancellation. A compressed body
    /// was inflated by curl before anything could count it: the gzip bomb held the request
    /// (and URLSession's queue) until the test's time limit.
    @Test(arguments: redirectBodies)
    func aRedirectBodyPastItsLimitFailsTheRequest(_ body: EndlessBody) async throws {
        let reply: RawHTTPServer.Handler = { _ in .stream(head: body.head, chunk: body.chunk, limit: body.limit) }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport()
            let request = HTTPRequest(method: .get, url: URL(string: server.url("/start"))!)
            let error = await #expect(throws: HTTPTransportError.self) {
                try await transport.send(request, body: nil)
            }
            #expect(error?.code == .responseTooLarge)
            #expect(
                error?.message
                    == "the response from 127.0.0.1:\(server.port) is larger than 1048576 bytes"
                    + " (a 302 response, whose body URLSession on Linux holds whole)")
            try await waitUntil("the transfer ended") { transport.transfersInProgress == 0 }
        }
    }

    /// On Linux the body of a 301–308 response comes back as sent, not decompressed (so that it
    /// is counted as it arrives); its `Content-Encoding` says how it is encoded.
    @Test func aCompressedRedirectBodyComesBackAsSent() async throws {
        // "moved", gzipped.
        let gzipped: [UInt8] = [
            31, 139, 8, 0, 0, 0, 0, 0, 2, 255, 203, 205, 47, 75, 77, 1, 0, 245, 141, 236, 198, 5, 0, 0, 0,
        ]
        let reply: RawHTTPServer.Handler = { _ in
            .response(status: 302, headers: [("Location", "/elsewhere"), ("Content-Encoding", "gzip")], body: gzipped)
        }
        try await withRawHTTPServer(reply) { server in
            let transport = URLSessionTransport()
            let (response, data) = try await transport.send(
                HTTPRequest(method: .get, url: URL(string: server.url("/start"))!), body: nil)
            #expect(response.status == .found)
            #expect(response.headerFields[.contentEncoding] == "gzip")
            #expect(Array(data) == gzipped)
        }
    }

    /// Requests cancelled while the body of their 302 keeps coming end (cancelled, or past the
    /// limit), and their transfers too, round after round. The transfer holds URLSession's queue,
    /// so the task's cancellation waits until the limit ends the transfer, then finds the task
    /// completed and does nothing; had it found it still running, its own end would have come
    /// after the task had left URLSession's registry, and crashed the process.
    @Test func requestsCancelledDuringARedirectBody() async throws {
        try await withRawHTTPServer(Self.endlessRedirect) { server in
            let transport = URLSessionTransport()
            let request = HTTPRequest(method: .get, url: URL(string: server.url("/start"))!)
            try await withHangGuard(.seconds(60)) {
                for round in 0..<24 {
                    let sending = Task { try await transport.send(request, body: nil) }
                    try await waitUntil("the request arrived") { server.requests.count == round + 1 }
                    for _ in 0..<(round % 6) { await Task.yield() }
                    sending.cancel()
                    do {
                        _ = try await sending.value
                        Issue.record("round \(round): the 302 came back")
                    } catch is CancellationError {
                    } catch let error as HTTPTransportError where error.code == .responseTooLarge {
                    } catch {
                        Issue.record("round \(round): \(error)")
                    }
                }
                try await waitUntil("every transfer ended") { transport.transfersInProgress == 0 }
            }
        }
    }
    #endif
}
