import Foundation
import Testing

/// What one run of the built `orchestra` executable did.
struct ProcessOutput: Sendable, CustomStringConvertible {
    let arguments: [String]
    /// The exit status; minus the signal's number when a signal ended the process.
    let status: Int32
    let stdout: String
    let stderr: String

    var description: String {
        let end = status < 0 ? "killed by signal \(-status)" : "exit \(status)"
        return
            "orchestra \(arguments.joined(separator: " ")) → \(end)\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)"
    }
}

/// The `orchestra` executable in the build folder, beside the test bundle (the test target
/// depends on the executable target, so it is built first). `ORCHESTRA_EXECUTABLE` overrides it.
enum OrchestraExecutable {
    static let url: URL = {
        if let path = ProcessInfo.processInfo.environment["ORCHESTRA_EXECUTABLE"] {
            return URL(fileURLWithPath: path)
        }
        var candidates: [URL] = []
        // Linux: argv[0] is …/debug/OrchestraPackageTests.xctest, next to `orchestra`.
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        // macOS: the .xctest bundle sits in the products folder.
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        candidates.append(Bundle.main.bundleURL)
        for folder in candidates {
            let url = folder.appendingPathComponent("orchestra")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return candidates[0].appendingPathComponent("orchestra")
    }()

    /// The package's root folder (for `Examples/`).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // OrchestraCLITests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// Runs `orchestra` with `arguments` and returns its exit status and output. Standard
    /// output is a pipe, so the command writes plain lines (no colours, no redraws).
    ///
    /// A run that has not ended within `limit` (a real-time guard far longer than a correct
    /// run, not a timing assertion) is killed and the test fails, naming the command.
    ///
    /// `executable` runs another program instead (such as `script`, to give `orchestra` a
    /// terminal).
    static func run(
        _ arguments: [String],
        executable: URL = url,
        environment: [String: String] = [:],
        limit: Duration = .seconds(120),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ProcessOutput {
        let running = try start(arguments, executable: executable, environment: environment)
        return await running.finish(limit: limit, sourceLocation: sourceLocation)
    }

    /// Starts `orchestra` with `arguments`, as a shell on a terminal would (see
    /// ``ChildProcess``), for a test that signals it while it runs; ``RunningOrchestra/finish(limit:sourceLocation:)``
    /// waits for its end.
    static func start(
        _ arguments: [String], executable: URL = url, environment: [String: String] = [:], readsOutput: Bool = true,
        writesInput: Bool = false
    ) throws -> RunningOrchestra {
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        for (key, value) in environment { env[key] = value }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: env, readsOutput: readsOutput,
            writesInput: writesInput
        )
        return RunningOrchestra(arguments: arguments, child: child)
    }
}

/// An `orchestra` process under way.
struct RunningOrchestra: Sendable {
    let arguments: [String]
    let child: ChildProcess

    /// Waits until it ends and returns what it did. One that has not ended within `limit` (a
    /// real-time guard far longer than a correct run, not a timing assertion) is killed, and
    /// the test fails naming the command.
    func finish(
        limit: Duration = .seconds(120), sourceLocation: SourceLocation = #_sourceLocation
    ) async -> ProcessOutput {
        if let status = await child.exitStatus(within: limit) {
            return await output(status: status)
        }
        child.send(SIGKILL)
        let status = await child.exitStatus(within: .seconds(10)) ?? -Int32(SIGKILL)
        let output = await output(status: status)
        Issue.record(
            "orchestra \(arguments.joined(separator: " ")) did not end within \(limit); killed.\n\(output)",
            sourceLocation: sourceLocation)
        return output
    }

    private func output(status: Int32) async -> ProcessOutput {
        ProcessOutput(
            arguments: arguments, status: status, stdout: await child.standardOutput.all(),
            stderr: await child.standardError.all())
    }
}
