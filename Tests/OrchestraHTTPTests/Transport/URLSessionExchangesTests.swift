import Foundation
import TestSupport
import Testing

@testable import OrchestraHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The rules `URLSessionTransport` keeps between its requests and their data tasks, without a
/// session: a request is resumed once, by its task's completion (or past the limit, or at a
/// challenge); a cancellation or a completion that comes before the request waits is kept for
/// it; a task is cancelled at most once, and only once resumed.
@Suite("URLSessionTransport: requests and their tasks", .timeLimit(.minutes(1)), .takesTurns)
struct URLSessionExchangesTests {
    /// A continuation the state machine did not resume.
    struct NotResumed: Error {}

    /// Runs `events` with a request's continuation; returns what the state machine resumed it
    /// with, or nil when it did not.
    static func outcome(
        _ events: (CheckedContinuation<URLSessionReply, any Error>) -> URLSessionExchanges.Resumption?
    ) async -> Result<URLSessionReply, any Error>? {
        do {
            let reply = try await withCheckedThrowingContinuation { continuation in
                if let resumption = events(continuation) {
                    resumption.continuation.resume(with: resumption.result)
                } else {
                    continuation.resume(throwing: NotResumed())
                }
            }
            return .success(reply)
        } catch is NotResumed {
            return nil
        } catch {
            return .failure(error)
        }
    }

    static func exchange(
        _ continuation: CheckedContinuation<URLSessionReply, any Error>, limit: Int = 10
    ) -> URLSessionExchanges.Exchange {
        .init(continuation: continuation, progress: nil, limit: limit, authority: "example.com")
    }

    static func code(_ result: Result<URLSessionReply, any Error>?) -> URLError.Code? {
        guard case .failure(let error as URLError) = result else { return nil }
        return error.code
    }

    /// The defect: a task cancelled before its request waited completed before the delegate
    /// knew the request, and the request waited forever.
    @Test func aCompletionBeforeTheRequestWaitsIsDeliveredWhenItDoes() async {
        var machine = URLSessionExchanges()
        var start: URLSessionExchanges.Start?
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            let early = machine.complete(1, error: URLError(.cancelled))
            #expect(early == nil, "kept for the request")
            start = machine.start(1, Self.exchange(continuation))
            guard case .deliver(let resumption) = start else { return nil }
            return resumption
        }
        #expect(Self.code(result) == .cancelled)
        #expect(machine.transfers.isEmpty)
    }

    @Test func aRequestCancelledBeforeItWaitsHasItsTaskCancelledOnceResumed() async {
        var machine = URLSessionExchanges()
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            let cancelNow = machine.cancel(1)
            #expect(!cancelNow, "not before the task is resumed")
            guard case .resumeAndCancel = machine.start(1, Self.exchange(continuation)) else {
                Issue.record("the task is not cancelled once resumed")
                return nil
            }
            #expect(machine.transfers == [1])
            return machine.complete(1, error: URLError(.cancelled))
        }
        #expect(Self.code(result) == .cancelled)
        #expect(machine.transfers.isEmpty)
    }

    @Test func aRequestUnderWayHasItsTaskCancelledAtOnceAndEndsWithItsCompletion() async {
        var machine = URLSessionExchanges()
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            guard case .resume = machine.start(1, Self.exchange(continuation)) else { return nil }
            let cancelNow = machine.cancel(1)
            #expect(cancelNow)
            return machine.complete(1, error: URLError(.cancelled))
        }
        #expect(Self.code(result) == .cancelled)
        let cancelAgain = machine.cancel(1)
        #expect(!cancelAgain, "a request that ended is left as it is")
    }

    @Test func pastTheLimitTheRequestFailsAndWhatComesAfterIsCounted() async throws {
        var machine = URLSessionExchanges()
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            _ = machine.start(1, Self.exchange(continuation, limit: 10))
            guard case .nothing = machine.receive(Data(count: 6), for: 1) else { return nil }
            guard case .tooLarge(let resumption) = machine.receive(Data(count: 5), for: 1) else { return nil }
            return resumption
        }
        guard case .failure(let error as HTTPTransportError) = result else {
            Issue.record("not failed past the limit: \(String(describing: result))")
            return
        }
        #expect(error.code == .responseTooLarge)
        #expect(error.message == "the response from example.com is larger than 10 bytes")
        guard case .ended = machine.receive(Data(count: 7), for: 1) else {
            Issue.record("a part after the end is taken")
            return
        }
        #expect(machine.bytesAfterTheEnd == 7)
        #expect(machine.transfers == [1], "until the task's cancellation lands")
        let completion = machine.complete(1, error: URLError(.cancelled))
        #expect(completion == nil)
        #expect(machine.transfers.isEmpty)
    }

    /// A task cancelled at its 301–308 body's limit (which the delegate never sees on Linux)
    /// completes with `URLError.cancelled`; the request fails as past its limit, naming it.
    @Test func aTaskStoppedAtItsRedirectBodyLimitFailsItsRequestAsTooLarge() async throws {
        var machine = URLSessionExchanges()
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            _ = machine.start(1, Self.exchange(continuation, limit: 100))
            return machine.complete(1, error: URLError(.cancelled), redirectBody: (status: 302, limit: 10))
        }
        guard case .failure(let error as HTTPTransportError) = result else {
            Issue.record("not failed past the limit: \(String(describing: result))")
            return
        }
        #expect(error.code == .responseTooLarge)
        #expect(
            error.message
                == "the response from example.com is larger than 10 bytes"
                + " (a 302 response, whose body URLSession on Linux holds whole)")
        #expect(machine.transfers.isEmpty)
    }

    @Test func aBodyWithinTheLimitComesBackWithItsResponse() async throws {
        var machine = URLSessionExchanges()
        let response = try #require(
            HTTPURLResponse(
                url: URL(string: "http://example.com/")!, statusCode: 200, httpVersion: nil, headerFields: nil))
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            _ = machine.start(1, Self.exchange(continuation, limit: 10))
            machine.receive(response, for: 1)
            _ = machine.receive(Data(repeating: 1, count: 4), for: 1)
            _ = machine.receive(Data(repeating: 2, count: 6), for: 1)
            return machine.complete(1, error: nil)
        }
        let reply = try #require(try result?.get())
        #expect(reply.response.statusCode == 200)
        #expect(reply.body == Data([1, 1, 1, 1, 2, 2, 2, 2, 2, 2]))
    }

    @Test func aChallengeEndsTheRequestWithItsResponse() async throws {
        var machine = URLSessionExchanges()
        let unauthorized = try #require(
            HTTPURLResponse(
                url: URL(string: "http://example.com/")!, statusCode: 401, httpVersion: nil, headerFields: nil))
        let result = await Self.outcome { continuation in
            machine.prepare(1)
            _ = machine.start(1, Self.exchange(continuation))
            _ = machine.receive(Data("no".utf8), for: 1)
            return machine.challenge(for: 1, failureResponse: unauthorized)
        }
        let reply = try #require(try result?.get())
        #expect(reply.response.statusCode == 401)
        #expect(reply.body == Data("no".utf8))
        let completion = machine.complete(1, error: URLError(.cancelled))
        #expect(completion == nil, "the task's completion finds no request")
    }
}
