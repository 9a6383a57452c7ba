import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// Issue 35: a body handed to a sink as it arrives, a smaller limit for one request, on both
/// transports.
@Suite("Transports: response bodies streamed or limited per request", .timeLimit(.minutes(1)), .takesTurns)
struct ResponseBodyHandlingTests {
    struct DiskFull: Error, Equatable {}

    /// Fails on its second part.
    final class FailingSink: HTTPResponseBodySink {
        let parts = Locked(0)
        func begin() throws {}
        func write(_ part: UnsafeRawBufferPointer) throws {
            let count = parts.withLock {
                $0 += 1
                return $0
            }
            if count == 2 { throw DiskFull() }
        }
    }

    @Test(arguments: TransportUnderTest.allCases)
    func whatASinkThrowsEndsTheRequestAsItIs(_ kind: TransportUnderTest) async throws {
        try await withDemoServer { server in
            let sink = FailingSink()
            let request = HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("large/\(16 << 20)"))
            await #expect(throws: DiskFull.self) {
                try await kind.with(HTTPClientSettings()) { transport in
                    try await transport.send(
                        request, content: nil, receiving: .init(sink: sink), progress: nil, timeout: nil)
                }
            }
        }
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aRequestCanHaveASmallerLimit(_ kind: TransportUnderTest) async throws {
        try await withDemoServer { server in
            let request = HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("large/\(2 << 20)"))
            let error = await #expect(throws: HTTPTransportError.self) {
                try await kind.with(HTTPClientSettings()) { transport in
                    try await transport.send(
                        request, content: nil, receiving: .init(maximumSize: 1 << 20), progress: nil, timeout: nil)
                }
            }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.message.contains("larger than 1048576 bytes") == true)
        }
    }
}
