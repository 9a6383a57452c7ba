import Foundation
import GRDB
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra run --state` when the state file can no longer be written (a full disk): the
/// run stops sending at the first failed write, the requests in flight end and are reported,
/// and the command says why and exits 1. Before, it went on sending every request unrecorded
/// and said so only at the end, and a resume sent them all again.
///
/// The disk fills through a file size limit (`ulimit -f` in the shell that starts the
/// command, with SIGXFSZ ignored so that a write past it fails instead of killing the
/// process): the state file's writes fail once its journal reaches the limit.
@Suite("orchestra run --state on a full disk", .timeLimit(.minutes(3)), .takesTurns)
struct StateFullDiskTests {
    static let elementCount = 3_000
    static let limit = 8

    /// Not under ThreadSanitizer (`ORCHESTRA_SKIP_EXIT_TESTS`, as the tests that kill their
    /// child): its runtime, linked into the command, faults (SIGBUS) under a file size limit.
    @Test(
        "the run stops sending at the first failed write of the state file, and says so",
        .enabled(if: ExitTests.areEnabled))
    func aRunStopsSendingWhenTheStateFileCannotBeWritten() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-full-disk-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let state = folder.appendingPathComponent("run.state").path
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                limit: \(Self.limit)
                steps:
                  - { id: list, url: "{{vars.base}}/list/\(Self.elementCount)", captures: { items: $.items } }
                  - id: each
                    for_each: "{{list.items}}"
                    url: "{{vars.base}}/anything/full-disk/{{item}}"
                """)
            defer { try? FileManager.default.removeItem(atPath: file) }
            // 256 blocks (128 KB in a POSIX shell's 512-byte blocks, 256 KB in bash's): room
            // for the file and its first records, not for 3,000 of them.
            let output = try await OrchestraExecutable.run(
                [
                    "-c", "ulimit -f 256 && trap '' XFSZ && exec \"$0\" \"$@\"", OrchestraExecutable.url.path, "run",
                    file, "--state", state,
                ],
                executable: URL(fileURLWithPath: "/bin/sh"), limit: .seconds(120))
            #expect(output.status == 1, "\(output)")
            #expect(output.stdout.contains("--state:"), "\(output)")
            #expect(output.stdout.contains("the elements not started were cancelled"), "\(output)")
            #expect(output.stderr.contains("orchestra run: error: --state:"), "\(output)")

            // Sent: the list and the elements that reached the server. Recorded: what the file
            // kept. The difference is what was in flight at the failure or ended just before it
            // (not committed): a few windows' worth, never the rest of the run.
            let sent = server.requestCount - 1
            let recorded = try Self.recordedElements(in: state)
            #expect(sent < Self.elementCount, "every element was sent: \(output)")
            #expect(
                sent - recorded <= 32 * Self.limit,
                "\(sent) elements sent, \(recorded) recorded: the run went on sending after the failure")
        }
    }

    /// How many `each` records the state file holds.
    static func recordedElements(in path: String) throws -> Int {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        let database = try DatabaseQueue(path: path, configuration: configuration)
        return try database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE step = 'each'") ?? 0
        }
    }
}
