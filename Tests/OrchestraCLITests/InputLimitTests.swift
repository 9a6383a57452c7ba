import Foundation
import TestSupport
import Testing

/// Input a user or a script controls, read in bounded time and memory: an endless pipe on
/// standard input is refused at the input file limit, and 10,000 `--var` are read in linear
/// time (ArgumentParser's cost is quadratic in the number of arguments).
@Suite("orchestra: input limits", .timeLimit(.minutes(2)), .takesTurns)
struct InputLimitTests {
    @Test("an endless pipe on standard input is refused at the input file limit, naming it")
    func anEndlessPipeIsRefused() async throws {
        let output = try await OrchestraExecutable.run(
            ["-c", "yes 'steps:' | \"$0\" validate -", OrchestraExecutable.url.path],
            executable: URL(fileURLWithPath: "/bin/sh"), environment: ["ORCHESTRA_INPUT_FILE_LIMIT": "1048576"],
            limit: .seconds(60))
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("<stdin>: error: larger than 1 MB (the limit for an input file)"), "\(output)")
    }

    @Test("10,000 --var are read in linear time; the last of a name wins")
    func tenThousandVariables() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-vars-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("flow.yaml")
        try Data("steps:\n  - id: a\n    url: \"{{vars.v1}}\"\n".utf8).write(to: file)
        // Every value but the last is not a URL: the file is valid only if the last one wins.
        let variables = (0..<10_000).flatMap { ["--var", "v\($0 % 2)=not a URL \($0)"] }
        let output = try await OrchestraExecutable.run(
            ["validate", file.path] + variables + ["--var=v1=http://x.test/"], limit: .seconds(30))
        #expect(output.status == 0, "\(output)")
        #expect(output.stdout.contains("ok — 1 step"), "\(output)")
        #expect(output.stderr.contains("--var v0: no template uses {{vars.v0}}"), "\(output)")
    }
}
