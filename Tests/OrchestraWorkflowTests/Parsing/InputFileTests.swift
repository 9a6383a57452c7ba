import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// Every input file is read through one function, in chunks, up to a limit.
@Suite("Input files: the size limit", .timeLimit(.minutes(1)), .takesTurns)
struct InputFileTests {
    @Test func theDefaultLimitIs256MB() {
        #expect(Workflow.defaultInputFileLimit == 256 << 20)
        #expect(Workflow.describeSize(Workflow.defaultInputFileLimit) == "256 MB")
        #expect(Workflow.describeSize(1_000) == "1000 bytes")
    }

    @Test(arguments: [1 << 20, 1_000])
    func anEndlessFileIsRefusedAtTheLimit(limit: Int) throws {
        let error = #expect(throws: WorkflowErrors.self) {
            try Workflow.readInputFile(at: "/dev/zero", file: "/dev/zero", limit: limit)
        }
        #expect(
            error?.errors.map(\.description)
                == ["/dev/zero: error: larger than \(Workflow.describeSize(limit)) (the limit for an input file)"])
    }

    @Test func aFileAtTheLimitIsRead() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-input-\(UUID())")
        try Data(repeating: 0x61, count: 3 << 20).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try Workflow.readInputFile(at: url.path, file: "f", limit: 3 << 20).count == 3 << 20)
        #expect(throws: WorkflowErrors.self) { try Workflow.readInputFile(at: url.path, file: "f", limit: 3 << 20 - 1) }
    }
}
