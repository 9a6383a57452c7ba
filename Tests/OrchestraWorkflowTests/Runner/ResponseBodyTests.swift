import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraHTTP
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// Issue 35: bodies saved to files, streamed when nothing reads them, limited per step, and
/// taken as sent with `compressed: false`.
@Suite("WorkflowRunner: response bodies saved, streamed, limited", .serialized, .timeLimit(.minutes(1)), .takesTurns)
struct ResponseBodyTests {
    /// Runs `body` with a new folder, removed after.
    static func inFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-save-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(folder)
    }

    /// A run whose relative save_to paths start in `folder`.
    static func runner(_ workflow: Workflow, in folder: URL) -> WorkflowRunner {
        WorkflowRunner(workflow: workflow, bodies: ResponseBodyOptions(directory: folder))
    }

    /// The bytes of the demo server's `/bytes/:count`.
    static func demoBytes(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    }

    @Test func eachElementIsSavedToItsOwnFileWithItsSizeAndHash() async throws {
        try await withDemoServer { server in
            try await Self.inFolder { folder in
                let workflow = try parse(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    steps:
                      - id: list
                        method: POST
                        url: "{{vars.base}}/anything"
                        body: { sizes: [10, 70000, 0] }
                        captures: { sizes: $.json.sizes }
                      - id: file
                        for_each: "{{list.sizes}}"
                        url: "{{vars.base}}/bytes/{{item}}"
                        save_to: "downloads/part-{{index}}.bin"
                    """)
                let report = await Self.runner(workflow, in: folder).run()
                #expect(report.allSucceeded, "\(report)")
                let items = try #require(report["file"]?.items)
                for (index, size) in [10, 70_000, 0].enumerated() {
                    let file = folder.appendingPathComponent("downloads/part-\(index).bin")
                    #expect(try Data(contentsOf: file) == Self.demoBytes(size))
                    let saved = try #require(items.first { $0.id == "file[\(index)]" }?.saved)
                    #expect(saved.path == "downloads/part-\(index).bin")
                    #expect(saved.bytes == size)
                }
                // SHA-256 of the empty body, a known value.
                #expect(
                    items.first { $0.id == "file[2]" }?.saved?.sha256
                        == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
                let leftovers = try FileManager.default.contentsOfDirectory(
                    atPath: folder.appendingPathComponent("downloads").path)
                #expect(leftovers.sorted() == ["part-0.bin", "part-1.bin", "part-2.bin"])
            }
        }
    }

    /// 3 MiB: several blocks of the writer's queue, hashed in order.
    @Test func aLargeBodyIsSavedWholeAndHashedInOrder() async throws {
        try await withDemoServer { server in
            try await Self.inFolder { folder in
                let workflow = try parse(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    steps:
                      - id: large
                        url: "{{vars.base}}/large/\(3 << 20)"
                        save_to: large.bin
                    """)
                let report = await Self.runner(workflow, in: folder).run()
                let saved = try #require(report["large"]?.saved, "\(report)")
                #expect(saved.bytes == 3 << 20)
                #expect(saved.sha256 == "3bea8a9a07c1e8dcaa4c1b816815c35a29b4fb585ba6ecc70ea44840a794cfb3")
                let data = try Data(contentsOf: folder.appendingPathComponent("large.bin"))
                #expect(data.count == 3 << 20 && data.allSatisfy { $0 == UInt8(ascii: "x") })
            }
        }
    }

    /// A step that saves its body and also checks it reads the same bytes.
    @Test func aSavedBodyCanAlsoBeCapturedAndChecked() async throws {
        try await withDemoServer { server in
            try await Self.inFolder { folder in
                let workflow = try parse(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    steps:
                      - id: saved
                        method: POST
                        url: "{{vars.base}}/anything"
                        body: { name: ada }
                        save_to: echo.json
                        captures: { name: $.json.name }
                        assert: [ $.json.name: ada ]
                    """)
                let report = await Self.runner(workflow, in: folder).run()
                #expect(report["saved"]?.state == .succeeded, "\(report)")
                #expect(report["saved"]?.captures.first?.value == .string("ada"))
                let file = try Data(contentsOf: folder.appendingPathComponent("echo.json"))
                #expect(report["saved"]?.saved?.bytes == file.count)
            }
        }
    }

    @Test(arguments: [
        ("../escape.bin", "has a '..' component"),
        ("a/../../escape.bin", "has a '..' component"),
    ])
    func aPathFromTheServerCannotLeaveTheFolder(_ name: String, _ message: String) async throws {
        try await withDemoServer { server in
            try await Self.inFolder { folder in
                let workflow = try parse(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    steps:
                      - id: list
                        method: POST
                        url: "{{vars.base}}/anything"
                        body: { names: ["\(name)"] }
                        captures: { names: $.json.names }
                      - id: file
                        for_each: "{{list.names}}"
                        url: "{{vars.base}}/bytes/5"
                        save_to: "downloads/{{item}}"
                    """)
                let report = await Self.runner(workflow, in: folder).run()
                #expect(report["file"]?.items?.first?.error?.contains(message) == true, "\(report)")
                #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("escape.bin").path))
                #expect(
                    !FileManager.default.fileExists(
                        atPath: folder.deletingLastPathComponent().appendingPathComponent("escape.bin").path))
            }
        }
    }

    @Test func aFolderThatIsASymbolicLinkIsRefusedAndTwoElementsCannotWriteOneFile() async throws {
        try await withDemoServer { server in
            try await Self.inFolder { folder in
                let elsewhere = folder.appendingPathComponent("elsewhere", isDirectory: true)
                try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(
                    at: folder.appendingPathComponent("linked"), withDestinationURL: elsewhere)
                let workflow = try parse(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    steps:
                      - id: linked
                        url: "{{vars.base}}/bytes/5"
                        save_to: linked/a.bin
                      - id: list
                        method: POST
                        url: "{{vars.base}}/anything"
                        body: { names: [same, same] }
                        captures: { names: $.json.names }
                      - id: twice
                        for_each: "{{list.names}}"
                        url: "{{vars.base}}/bytes/5"
                        save_to: "out/{{item}}.bin"
                    """)
                let report = await Self.runner(workflow, in: folder).run()
                #expect(report["linked"]?.error?.contains("goes through a symbolic link") == true, "\(report)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
                #expect(report["twice"]?.itemCounts?.succeeded == 1)
                #expect(
                    report["twice"]?.items?.contains { $0.error?.contains("was written by twice[") == true } == true)
            }
        }
    }

    @Test func aFailedStatusSavesNothingAndLeavesNoPartialFile() async throws {
        try await withDemoServer { server in
            try await Self.inFolder { folder in
                try Data("before".utf8).write(to: folder.appendingPathComponent("kept.bin"))
                let workflow = try parse(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    steps:
                      - id: missing
                        url: "{{vars.base}}/status/404"
                        save_to: kept.bin
                    """)
                let report = await Self.runner(workflow, in: folder).run()
                #expect(report["missing"]?.error?.contains("nothing was saved") == true, "\(report)")
                #expect(try String(contentsOf: folder.appendingPathComponent("kept.bin"), encoding: .utf8) == "before")
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["kept.bin"])
            }
        }
    }

    @Test func aBodyNothingReadsIsCountedNotHeldAndOneThatIsReadIsLimited() async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: unread
                    url: "{{vars.base}}/large/\(20 << 20)"
                  - id: read
                    url: "{{vars.base}}/large/\(2 << 20)"
                    assert: [ body: { contains: "x" } ]
                  - id: allowed
                    url: "{{vars.base}}/large/\(2 << 20)"
                    max_body: 4MB
                    assert: [ body: { contains: "x" } ]
                """)
            let bodies = ResponseBodyOptions(maximumSize: 1 << 20)
            let report = await WorkflowRunner(workflow: workflow, bodies: bodies).run()
            #expect(report["unread"]?.state == .succeeded, "\(report)")
            #expect(report["unread"]?.bodyBytes == 20 << 20)
            #expect(report["read"]?.error?.contains("larger than 1048576 bytes") == true, "\(report)")
            #expect(report["allowed"]?.state == .succeeded)

            // Held for --verbose: the unread body is limited too.
            let verbose = await WorkflowRunner(
                workflow: workflow, bodies: ResponseBodyOptions(maximumSize: 1 << 20, holdsUnread: true)
            ).run()
            #expect(verbose["unread"]?.error?.contains("larger than 1048576 bytes") == true)
        }
    }

    @Test func compressedFalseTakesTheBodyAsSent() async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: decoded
                    url: "{{vars.base}}/gzip"
                    assert: [ $.gzipped: true, "$.headers.Accept-Encoding": { exists: true } ]
                  - id: as_sent
                    url: "{{vars.base}}/gzip"
                    compressed: false
                    assert: [ "header Content-Encoding": gzip ]
                    captures: { size: { header: Content-Length } }
                  - id: not_json
                    url: "{{vars.base}}/gzip"
                    compressed: false
                    captures: { flag: $.gzipped }
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report["decoded"]?.state == .succeeded, "\(report["decoded"]?.error ?? "")")
            #expect(report["as_sent"]?.state == .succeeded, "\(report)")
            #expect(report["not_json"]?.error?.contains("not JSON") == true, "\(report)")
        }
    }

    @Test(arguments: [
        ("64MB", 64 << 20), ("512KB", 512 << 10), ("1GiB", 1 << 30), ("65536", 65_536), ("2tb", nil), ("0", nil),
        ("x", nil),
    ])
    func sizesAreReadAsCurlReadsThem(_ text: String, _ bytes: Int?) {
        #expect(ByteSize.parse(text) == bytes)
    }
}
