import Foundation
import HTTPTypes
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

@Suite("RawHTTPServer", .timeLimit(.minutes(1)), .takesTurns)
struct RawHTTPServerTests {
    @Test func itWritesTheGivenFieldsAsTheyAreAndRecordsTheRequest() async throws {
        let reply: RawHTTPServer.Handler = { request in
            .response(status: 418, headers: [("X-Echo", request.text), ("X-Dup", "1"), ("X-Dup", "2")], body: "tea")
        }
        try await withRawHTTPServer(reply) { server in
            var request = HTTPRequest(method: .post, url: URL(string: server.url("/brew?x=1"))!)
            request.headerFields[HTTPField.Name("X-Client")!] = "yes"
            let (response, body) = try await URLSessionTransport().send(request, body: Data("hello".utf8))
            #expect(response.status.code == 418)
            #expect(response.headerFields[HTTPField.Name("X-Echo")!] == "hello")
            // Both fields arrive (URLSession joins them into one).
            #expect(response.headerFields[values: HTTPField.Name("X-Dup")!].joined(separator: ", ") == "1, 2")
            #expect(String(decoding: body, as: UTF8.self) == "tea")
            let received = try #require(server.requests.first)
            #expect(received.method == "POST")
            #expect(received.target == "/brew?x=1")
            #expect(received.header("x-client") == "yes")
            #expect(received.text == "hello")
        }
    }

    @Test func aStreamedReplyStopsAtItsLimit() async throws {
        let head = Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8)
        let reply: RawHTTPServer.Handler = { _ in
            .stream(head: head, chunk: Array(repeating: 0x61, count: 1000), limit: 2500)
        }
        try await withRawHTTPServer(reply) { server in
            let (response, body) = try await URLSessionTransport().send(
                HTTPRequest(method: .get, url: URL(string: server.url())!), body: nil)
            #expect(response.status.code == 200)
            #expect(body.count == 2500)
        }
    }
}
