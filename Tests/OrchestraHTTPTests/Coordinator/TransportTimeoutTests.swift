import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

/// How a request's timeout reaches the transport (`HTTPTransport.send(_:content:progress:timeout:)`).
@Suite("HTTPCoordinator: a request's timeout and the transport", .timeLimit(.minutes(1)), .takesTurns)
struct TransportTimeoutTests {
    /// Answers at once, and records the timeout each request came with (`nil`: sent without).
    private final class TimeoutRecorder: HTTPTransport {
        let timeouts = Locked<[Duration?]>([])
        let maximumConnectionsPerHost = 8

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            timeouts.withLock { $0.append(nil) }
            return ok()
        }

        func send(
            _ request: HTTPRequest, content: HTTPRequestBody?,
            progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration
        ) async throws -> (HTTPResponse, Data) {
            timeouts.withLock { $0.append(timeout) }
            return ok()
        }
    }

    @Test("on the real clock, a timed request reaches the transport with its timeout; an untimed one without")
    func realClockPassesTheTimeout() async throws {
        let transport = TimeoutRecorder()
        let api = HTTPCoordinator(transport: transport, configuration: .init(requestTimeout: nil))
        _ = try await api.data(for: get("a.test"), options: HTTPRequestOptions(timeout: .seconds(7)))
        _ = try await api.data(for: get("a.test"))
        #expect(transport.timeouts.withLock { $0 } == [.seconds(7), nil])
    }

    @Test("on another clock the coordinator times the request itself and sends it without a timeout")
    func manualClockKeepsItsOwnTimer() async throws {
        let transport = TimeoutRecorder()
        let api = HTTPCoordinator(transport: transport, configuration: .init(requestTimeout: nil), clock: ManualClock())
        _ = try await api.data(for: get("a.test"), options: HTTPRequestOptions(timeout: .seconds(7)))
        #expect(transport.timeouts.withLock { $0 } == [nil])
    }

    // The default implementation is on the real clock (it is what the coordinator uses on the
    // real clock), so this waits out a 1 ms deadline; the answer never comes.
    @Test("the default implementation gives up at the timeout with a TimeoutError naming it")
    func defaultImplementationTimesOut() async throws {
        let never = AsyncEvent()
        let transport = ScriptedHTTPTransport { _, _ in
            try await never.wait()
            return ok()
        }
        let error = await #expect(throws: TimeoutError.self) {
            try await transport.send(get("a.test"), content: nil, progress: nil, timeout: .milliseconds(1))
        }
        #expect(error?.timeout == .milliseconds(1))
    }
}
