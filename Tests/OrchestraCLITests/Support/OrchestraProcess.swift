import Foundation
import Testing

/// What one run of the built `orchestra` executable did.
struct ProcessOutput: Sendable, CustomStringConvertible {
    let arguments: [String]
    let status: Int32
    let stdout: String
    let stderr: String

    var description: String {
        "orchestra \(arguments.joined(separator: " ")) → exit \(status)\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)"
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
        .deletingLastPathComponent()   // Support
        .deletingLastPathComponent()   // OrchestraCLITests
        .deletingLastPathComponent()   // Tests
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
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice

        let exited = ProcessExit()
        process.terminationHandler = { process in exited.signal(process.terminationStatus) }
        try process.run()
        // Drain both pipes on their own threads so a full pipe never stalls the child.
        let stdout = Drain(out.fileHandleForReading)
        let stderr = Drain(err.fileHandleForReading)

        let status: Int32
        if let ended = await exited.wait(limit: limit) {
            status = ended
        } else {
            process.terminate()
            kill(process.processIdentifier, SIGKILL)
            _ = await exited.wait(limit: .seconds(10))
            let output = ProcessOutput(arguments: arguments, status: -1, stdout: stdout.text(), stderr: stderr.text())
            Issue.record("orchestra \(arguments.joined(separator: " ")) did not end within \(limit); killed.\n\(output)", sourceLocation: sourceLocation)
            return output
        }
        return ProcessOutput(arguments: arguments, status: status, stdout: stdout.text(), stderr: stderr.text())
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class Drain: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var data = Data()   // written once by the reading thread, read after `done`

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func text() -> String {
        // Bounded: the child has exited (or been killed), so its end of the pipe is closed.
        _ = done.wait(timeout: .now() + 30)
        return String(decoding: data, as: UTF8.self)
    }
}

/// The child's exit status, awaited with a real-time bound.
private final class ProcessExit: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32?
    private var gaveUp = false
    private var continuation: CheckedContinuation<Int32?, Never>?

    func signal(_ value: Int32) {
        let waiting = lock.withLock {
            status = value
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: value)
    }

    /// The status, or `nil` if the child has not exited within `limit`.
    func wait(limit: Duration) async -> Int32? {
        lock.withLock { gaveUp = false }
        return await withTaskGroup(of: Int32?.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                    let ready: Int32?? = self.lock.withLock {
                        if self.status != nil || self.gaveUp { return .some(self.status) }
                        self.continuation = continuation
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }
            group.addTask {
                // The hang guard: a child process runs on real time, not on a test's clock, so
                // this bound is real time too (far longer than any correct run; not a timing
                // assertion).
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            // Release the waiter, if it is still waiting, so the group can end.
            let (waiting, status) = lock.withLock { () -> (CheckedContinuation<Int32?, Never>?, Int32?) in
                gaveUp = true
                defer { continuation = nil }
                return (continuation, self.status)
            }
            waiting?.resume(returning: status)
            group.cancelAll()
            return first ?? status
        }
    }
}
