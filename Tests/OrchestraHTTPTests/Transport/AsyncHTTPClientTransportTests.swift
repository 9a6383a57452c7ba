import Foundation
import HTTPTypes
import Orchestra
import OrchestraAsyncHTTPClient
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// The same guarantees over AsyncHTTPClient (SwiftNIO), against the demo server.
@Suite("AsyncHTTPClientTransport against the demo server", .serialized, .timeLimit(.minutes(2)), .takesTurns)
struct AsyncHTTPClientTransportTests {
    @Test func theCoordinatorLimitAboveTheClientsDefaultCapIsWhatLimits() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                // 16 is above AsyncHTTPClient's default of 8 connections per host.
                let api = HTTPCoordinator(
                    transport: transport,
                    configuration: .init(maxConcurrentRequests: 16, maxConcurrentRequestsPerHost: 16))
                server.closeGate()
                let names = try await withThrowingTaskGroup(of: String.self) { group in
                    for index in 0..<40 {
                        group.addTask { text(try await api.data(for: server.request("/gated/\(index)"))) }
                    }
                    try await waitUntil("16 requests held at the server") { server.inFlight == 16 }
                    server.openGate()
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
                #expect(names == Set((0..<40).map(String.init)))
                #expect(server.peakInFlight == 16)
            }
        }
    }

    @Test func headersBodiesAndStatusesGoThroughAndCancellationIsCancellationError() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                let api = HTTPCoordinator(transport: transport, configuration: .init(retry: .never))
                let login = try token(
                    from: try await api.data(for: server.request("/login", method: .post), body: Data("{}".utf8)))
                var protected = server.request("/protected")
                protected.headerFields[.authorization] = "Bearer \(login.value)"
                #expect(try await api.data(for: protected).status == .ok)
                #expect(try await api.data(for: server.request("/protected")).status == .unauthorized)
                let busy = try await api.data(for: server.request("/flaky/x?failures=1"))
                #expect(busy.status == .serviceUnavailable)
                #expect(busy.response.headerFields[.retryAfter] == "1")

                let hanging = Task { try await api.data(for: server.request("/hang")) }
                try await waitUntil("arrived") { server.arrivals(of: "/hang") == 1 }
                hanging.cancel()
                await #expect(throws: CancellationError.self) { try await withHangGuard { try await hanging.value } }
            }
        }
    }

    @Test func aFileBodyIsStreamedWhole() async throws {
        // 300 KiB: several 64 KiB reads and a short last one; each byte is its offset's pattern.
        let bytes = Data((0..<(300 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-upload-\(UUID())")
        try bytes.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                let api = HTTPCoordinator(transport: transport, configuration: .init(retry: .never))
                var upload = server.request("/anything/upload", method: .put)
                upload.headerFields[.contentType] = "application/octet-stream"
                let result = try await api.data(for: upload, content: .file(file), options: HTTPRequestOptions())
                let echo = try #require(try JSONSerialization.jsonObject(with: result.body) as? [String: Any])
                #expect(echo["bodyLength"] as? Int == bytes.count)
                #expect(echo["bodyBase64"] as? String == bytes.base64EncodedString())
                let missing = file.appendingPathExtension("gone")
                await #expect(throws: HTTPTransportError.self) {
                    try await api.data(for: upload, content: .file(missing), options: HTTPRequestOptions())
                }
            }
        }
    }

    @Test func aTokenStormOverAsyncHTTPClientCausesOneRefresh() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                let refresher = TokenRefresher(initial: AuthToken(server.issueToken())) { _ in
                    let (_, body) = try await transport.send(server.request("/refresh", method: .post), body: nil)
                    return try token(from: HTTPResult(response: HTTPResponse(status: .ok), body: body))
                }
                let api = HTTPCoordinator(
                    transport: transport,
                    configuration: .init(
                        maxConcurrentRequests: 32, maxConcurrentRequestsPerHost: 32,
                        authentication: .init(refresher: refresher)
                    ))
                server.expireToken()
                let statuses = try await (0..<1_000).concurrentMap(limit: 1_000) { _ in
                    try await api.data(for: server.request("/protected")).status
                }
                #expect(statuses.allSatisfy { $0 == .ok })
                #expect(server.refreshCalls == 1)
            }
        }
    }

    @Test func aLargeDownloadReportsItsProgressAsBytesArrive() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                let api = HTTPCoordinator(transport: transport)
                let reports = EventLog<(Int, Int?)>()
                let result = try await api.data(for: server.request("/payload/2000000")) { received, expected in
                    reports.append((received, expected))
                }
                #expect(result.body.count == 2_000_000)
                let events = reports.events
                #expect(events.count > 1, "streamed in parts")
                #expect(zip(events, events.dropFirst()).allSatisfy { $0.0 < $1.0 }, "growing")
                #expect(events.last?.0 == 2_000_000)
                #expect(events.allSatisfy { $0.1 == 2_000_000 })
            }
        }
    }
}
