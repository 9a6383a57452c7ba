import TestSupport
import Testing

@testable import OrchestraCLI

@Suite("orchestra --version", .timeLimit(.minutes(5)), .takesTurns)
struct VersionTests {
    @Test("--version prints the version, the one the User-Agent of orchestra run carries")
    func printsTheVersion() async throws {
        let output = try await OrchestraExecutable.run(["--version"])
        #expect(output.status == 0, "\(output)")
        #expect(output.stdout == OrchestraVersion.current + "\n", "\(output)")
        #expect(OrchestraVersion.userAgent == "orchestra/" + OrchestraVersion.current)
        let parts = OrchestraVersion.current.split(separator: ".")
        #expect(
            parts.count == 3 && parts.allSatisfy { Int($0) != nil }, "MAJOR.MINOR.PATCH: \(OrchestraVersion.current)")
    }
}
