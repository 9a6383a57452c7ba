import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("form, multipart and body_file", .timeLimit(.minutes(1)), .takesTurns)
struct FormAndFileBodyTests {
    /// A folder with `photo.png` (bytes 0…255) and `notes.txt`, removed by the caller.
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-bodies-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((0...255).map(UInt8.init)).write(to: folder.appendingPathComponent("photo.png"))
        try Data("hello\nworld".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        return folder
    }

    /// Runs `text` (its files relative to `folder`); returns what the server received.
    func run(_ text: String, in folder: URL) async throws -> (WorkflowReport, [(HTTPRequest, Data?)]) {
        let workflow = try Workflow.parse(text, file: "flow.yaml", environment: [:], directory: folder)
        let received = Locked<[(HTTPRequest, Data?)]>([])
        let transport = ScriptedHTTPTransport { request, body in
            received.withLock { $0.append((request, body)) }
            return respond(200, #"{"name":"a b&c"}"#)
        }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        return (report, received.withLock { $0 })
    }

    @Test func aFormIsURLEncodedInFileOrder() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (report, received) = try await run(
            """
            steps:
              - { id: a, url: "http://x.test/a", captures: { name: $.name } }
              - { id: b, method: POST, url: "http://x.test/b", form: { user: "{{a.name}}", "é x": "1+1=2", empty: "" } }
            """, in: folder)
        #expect(report.allSucceeded)
        let (request, body) = try #require(received.last)
        #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(String(decoding: body ?? Data(), as: UTF8.self) == "user=a+b%26c&%C3%A9+x=1%2B1%3D2&empty=")
    }

    @Test func multipartSendsFieldsAndFilesWithTheirTypesAndNames() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (report, received) = try await run(
            """
            steps:
              - id: up
                method: POST
                url: "http://x.test/upload"
                multipart:
                  - { name: title, value: "Hi \\"there\\"" }
                  - { name: photo, file: photo.png }
                  - { name: notes, file: ./notes.txt, content_type: text/markdown }
            """, in: folder)
        #expect(report.allSucceeded, "\(report.steps.compactMap(\.error))")
        let (request, body) = try #require(received.first)
        let type = try #require(request.headerFields[.contentType])
        #expect(type.hasPrefix("multipart/form-data; boundary=orchestra-"))
        let boundary = String(type.dropFirst("multipart/form-data; boundary=".count))
        var expected = Data()
        expected.append(
            Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHi \"there\"\r\n".utf8))
        expected.append(
            Data(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"photo.png\"\r\nContent-Type: image/png\r\n\r\n"
                    .utf8))
        expected.append(Data((0...255).map(UInt8.init)))
        expected.append(
            Data(
                "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"notes\"; filename=\"notes.txt\"\r\nContent-Type: text/markdown\r\n\r\nhello\nworld\r\n--\(boundary)--\r\n"
                    .utf8))
        #expect(body == expected)
    }

    @Test func bodyFileSendsTheFileAsIsTypedByItsExtensionUnlessAHeaderSays() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (_, received) = try await run(
            """
            steps:
              - { id: a, method: PUT, url: "http://x.test/a", body_file: photo.png }
              - { id: b, method: PUT, url: "http://x.test/b", body_file: notes.txt, headers: { Content-Type: text/x-notes } }
            """, in: folder)
        let byPath = Dictionary(received.map { ($0.0.path ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byPath["/a"]?.1 == Data((0...255).map(UInt8.init)))
        #expect(byPath["/a"]?.0.headerFields[.contentType] == "image/png")
        #expect(byPath["/b"]?.1 == Data("hello\nworld".utf8))
        #expect(byPath["/b"]?.0.headerFields[.contentType] == "text/x-notes")
    }

    @Test func badBodiesAreErrorsNamingTheFieldAndThePath() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var messages: [String] = []
        do {
            _ = try Workflow.parse(
                """
                steps:
                  - { id: a, url: "http://x.test/", body_file: missing.bin }
                  - { id: b, url: "http://x.test/", body: x, form: { a: "1" } }
                  - { id: c, url: "http://x.test/", multipart: [ { name: n, value: v, file: photo.png } ] }
                  - { id: d, url: "http://x.test/", multipart: [ { value: v } ] }
                  - { id: e, url: "http://x.test/", multipart: { name: n } }
                  - { id: f, url: "http://x.test/", body_file: "." }
                  - { id: g, url: "http://x.test/", form: [a] }
                """, file: "flow.yaml", environment: [:], directory: folder)
        } catch {
            messages = error.errors.map(\.description)
        }
        let expected: [(line: Int, text: String)] = [
            (2, "field 'body_file': no such file 'missing.bin'"),
            (3, "give only one of body, form, multipart, body_file"),
            (4, "either 'value' (text) or 'file'"),
            (5, "missing 'name'"),
            (6, "must be a list of parts"),
            (7, "is a directory"),
            (8, "must be a mapping"),
        ]
        for (line, text) in expected {
            #expect(
                messages.contains { $0.hasPrefix("flow.yaml:\(line):") && $0.contains(text) },
                "line \(line): \(text) in \(messages)")
        }
    }
}
