import Foundation
import HTTPTypes
import OrchestraAsyncHTTPClient
import OrchestraDemoServer
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

/// The demo server's httpbin-compatible routes and `/barrier`, with their bounds.
@Suite("Demo server routes", .serialized, .timeLimit(.minutes(2)), .takesTurns)
struct DemoServerRoutesTests {
    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func anythingEchoesMethodPathQueryHeaderBytesAndBody() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                var request = server.request("/anything/a/b?x=1&x=2&y=%C3%A9", method: .delete)
                request.headerFields[HTTPField.Name("X-Text")!] = "café"
                let body = Data([0xFF, 0x00, 0x41])
                let (response, data) = try await transport.send(request, body: body)
                #expect(response.status == .ok)
                let echo = try json(data)
                #expect(echo["method"] as? String == "DELETE")
                #expect(echo["path"] as? String == "/anything/a/b?x=1&x=2&y=%C3%A9")
                #expect(echo["url"] as? String == "http://\(server.authority)/anything/a/b?x=1&x=2&y=%C3%A9")
                let args = try #require(echo["args"] as? [String: Any])
                #expect(args["x"] as? [String] == ["1", "2"])
                #expect(args["y"] as? String == "é")
                #expect((echo["headersHex"] as? [String: String])?["X-Text"] == "636166c3a9")
                #expect(
                    (echo["headers"] as? [String: String])?["X-Text"] == "caf\u{C3}\u{A9}",
                    "httpbin's reading: one character per byte")
                #expect(echo["data"] as? String == "data:application/octet-stream;base64,/wBB")
                #expect(echo["bodyLength"] as? Int == 3)
                #expect(echo["bodyBase64"] as? String == "/wBB")

                let (tooLarge, _) = try await transport.send(
                    server.request("/anything", method: .post), body: Data(count: (4 << 20) + 1))
                #expect(tooLarge.status == .contentTooLarge)
                let (largest, echoed) = try await transport.send(
                    server.request("/anything", method: .post), body: Data(repeating: 0xFF, count: 4 << 20))
                #expect(largest.status == .ok)
                #expect(try json(echoed)["bodyLength"] as? Int == 4 << 20)

                let (_, text) = try await transport.send(
                    server.request("/anything", method: .post), body: Data(#"{"a":1}"#.utf8))
                #expect(try json(text)["data"] as? String == #"{"a":1}"#)
                #expect(try json(text)["json"] as? [String: Int] == ["a": 1])
            }
        }
    }

    @Test func statusRedirectToBytesAndTheirBounds() async throws {
        try await withDemoServer { server in
            try await AsyncHTTPClientTransport.withTransport { transport in
                for (path, status) in [
                    ("/status/418", 418), ("/status/199", 400), ("/status/600", 400),
                    ("/status/401?challenge=NTLM", 400), ("/bytes/-1", 400), ("/bytes/\((64 << 20) + 1)", 400),
                ] {
                    let method: HTTPRequest.Method = path.hasPrefix("/bytes") ? .get : .patch
                    let (response, _) = try await transport.send(server.request(path, method: method), body: nil)
                    #expect(response.status.code == status, "\(path)")
                }
                let (basic, _) = try await transport.send(server.request("/status/401"), body: nil)
                #expect(basic.headerFields[.wwwAuthenticate] == #"Basic realm="Fake Realm""#)
                let (digest, _) = try await transport.send(server.request("/status/401?challenge=Digest"), body: nil)
                #expect(digest.headerFields[.wwwAuthenticate]?.hasPrefix("Digest ") == true)

                let (redirect, body) = try await transport.send(
                    server.request("/redirect-to?url=%2Fanything%3Fa%3D1&status_code=200", method: .put), body: nil)
                #expect(redirect.status.code == 302, "302 unless 300…399")
                #expect(redirect.headerFields[.location] == "/anything?a=1")
                #expect(String(decoding: body, as: UTF8.self) == "redirecting to /anything?a=1\n")
                let (missing, _) = try await transport.send(server.request("/redirect-to"), body: nil)
                #expect(missing.status == .badRequest)
                let (head, headBody) = try await transport.send(server.request("/anything", method: .head), body: nil)
                #expect(head.status == .ok && headBody.isEmpty)
            }
        }
    }

    @Test func aBarrierAnswersOnceItsCountArrivedAndIsBounded() async throws {
        try await withDemoServer { server in
            // 256 connections: every request of the largest barrier must be in flight at once.
            try await AsyncHTTPClientTransport.withTransport(maximumConnectionsPerHost: 256) { transport in
                for count in [0, 257] {
                    let (response, _) = try await transport.send(server.request("/barrier/x?count=\(count)"), body: nil)
                    #expect(response.status == .badRequest, "count \(count)")
                }
                let (single, _) = try await transport.send(server.request("/barrier/one?count=1"), body: nil)
                #expect(single.status == .ok)
                // The largest barrier fills and releases every request.
                let statuses = try await (0..<256).concurrentMap(limit: 256) { _ in
                    try await transport.send(server.request("/barrier/many?count=256"), body: nil).0.status
                }
                #expect(statuses.allSatisfy { $0 == .ok })
            }
        }
    }
}
