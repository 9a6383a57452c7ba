import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// The files `orchestra run` writes (reports, trace, cookie jar) and its standard output: a
/// failed write is an error, every path is checked before the first request, each file is
/// written on its own, never through a symlink, and the cookie jar is private.
@Suite("orchestra run: the files it writes", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct OutputFilesCommandTests {
    /// A new empty folder.
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-out-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A workflow of one GET of `/users/7` on `server`.
    static func workflow(_ server: DemoServer, path: String = "/users/7") throws -> String {
        try WorkflowCommandTests.workflowFile(
            """
            steps:
              - { id: user, url: "\(server.baseURL.absoluteString)\(path)" }
            """)
    }

    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    static func isSymlink(_ path: String) -> Bool {
        (try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType) == .typeSymbolicLink
    }

    @Test(
        "a report that cannot be written to standard output (a full disk) is an error: exit 1, said on stderr",
        arguments: ["text", "json"])
    func fullStandardOutput(output: String) async throws {
        try await withDemoServer { server in
            let file = try Self.workflow(server)
            let result = try await OrchestraExecutable.run(
                ["-c", #"exec "$0" "$@" >/dev/full"#, OrchestraExecutable.url.path, "run", file, "--output", output],
                executable: URL(fileURLWithPath: "/bin/sh"))
            #expect(result.status == 1, "\(result)")
            #expect(
                result.stderr.contains(
                    "orchestra run: error: cannot write the report to standard output: No space left on device"),
                "\(result)")
        }
    }

    @Test(
        "validate and graph on a full standard output: exit 1, said on stderr, instead of a silent 0",
        arguments: [["validate"], ["graph", "--format", "dot"]])
    func fullStandardOutputOfTheOtherCommands(command: [String]) async throws {
        let file = try WorkflowCommandTests.workflowFile(
            """
            steps:
              - { id: user, url: "http://127.0.0.1:1/users/7" }
            """)
        let result = try await OrchestraExecutable.run(
            ["-c", #"exec "$0" "$@" >/dev/full"#, OrchestraExecutable.url.path, command[0], file] + command.dropFirst(),
            executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(result.status == 1, "\(result)")
        #expect(
            result.stderr.contains(
                "orchestra \(command[0]): error: cannot write the report to standard output: No space left on device"),
            "\(result)")
    }

    /// `TMP` in an argument or message is a new folder; `NOPE` a folder that does not exist.
    @Test(
        "an output path that cannot be written is refused before the first request: exit 2, naming option, path and why",
        arguments: [
            (
                ["--report-html", "NOPE/x.html"],
                ["--report-html 'NOPE/x.html': cannot write: the folder 'NOPE' does not exist"]
            ),
            (["--report-junit", "TMP"], ["--report-junit 'TMP': cannot write: it is a folder"]),
            (["--report-junit", "TMP/"], ["--report-junit 'TMP/': cannot write: the path names a folder"]),
            (
                ["--cookie-jar", "NOPE/jar.txt"],
                ["--cookie-jar 'NOPE/jar.txt': cannot write: the folder 'NOPE' does not exist"]
            ),
            (["--trace", "TMP/flow.yaml"], ["--trace: 'TMP/flow.yaml' is a file, not a folder"]),
            (
                ["--report-html", "NOPE/x.html", "--report-junit", "NOPE/x.xml", "--cookie-jar", "TMP/flow.yaml/j"],
                [
                    "--report-html 'NOPE/x.html': cannot write: the folder 'NOPE' does not exist",
                    "--report-junit 'NOPE/x.xml': cannot write: the folder 'NOPE' does not exist",
                    "--cookie-jar 'TMP/flow.yaml/j': cannot write: 'TMP/flow.yaml' is not a folder",
                ]
            ),
            (
                ["--data", "TMP/rows.csv", "--report-junit", "NOPE/x.xml"],
                ["--report-junit 'NOPE/x.xml': cannot write"]
            ),
        ])
    func badOutputPaths(arguments: [String], messages: [String]) async throws {
        try await withDemoServer { server in
            let folder = try Self.folder()
            let missing = folder + "/missing"
            let resolve = { (text: String) in
                text.replacingOccurrences(of: "TMP", with: folder).replacingOccurrences(of: "NOPE", with: missing)
            }
            try Data("a\n1\n".utf8).write(to: URL(fileURLWithPath: folder + "/rows.csv"))
            try Data("steps: []\n".utf8).write(to: URL(fileURLWithPath: folder + "/flow.yaml"))
            let file = try Self.workflow(server)
            let result = try await OrchestraExecutable.run(["run", file] + arguments.map(resolve))
            #expect(result.status == 2, "\(result)")
            for message in messages {
                #expect(result.stderr.contains("orchestra run: error: " + resolve(message)), "\(result)")
            }
            #expect(server.requestCount == 0, "nothing is sent: \(result)")
            #expect(!FileManager.default.fileExists(atPath: missing), "\(result)")
            let left = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
                $0.hasPrefix(".orchestra-")
            }
            #expect(left.isEmpty, "the check leaves no file behind: \(left)")
        }
    }

    @Test(
        "a cookie jar (and a report) that cannot be saved after the run leave the other files written, and each failure is said"
    )
    func failedSavesDoNotStopTheOthers() async throws {
        try await withDemoServer { server in
            let gone = try Self.folder()
            let kept = try Self.folder()
            let file = try Self.workflow(server, path: "/gated/one")
            server.closeGate()
            let running = try OrchestraExecutable.start([
                "run", file, "--cookie-jar", gone + "/jar.txt", "--report-junit", gone + "/r.xml",
                "--report-html", kept + "/r.html", "--trace", kept + "/trace",
            ])
            try await withHangGuard { try await server.arrival(of: "/gated/one") }
            // The folder goes away while the run waits: the checks before it passed.
            try FileManager.default.removeItem(atPath: gone)
            server.openGate()
            let result = await running.finish()
            #expect(result.status == 1, "\(result)")
            #expect(
                result.stderr.contains(
                    "orchestra run: error: --cookie-jar '\(gone)/jar.txt': cannot write: the folder '\(gone)' does not exist"
                ), "\(result)")
            #expect(
                result.stderr.contains("orchestra run: error: --report-junit '\(gone)/r.xml': cannot write"),
                "\(result)")
            for written in ["/r.html", "/trace/flow.trace.json", "/trace/flow.html"] {
                #expect(FileManager.default.fileExists(atPath: kept + written), "\(written): \(result)")
            }
            #expect(result.stdout.contains("trace: \(kept)/trace/flow.trace.json"), "\(result)")
        }
    }

    /// Each output, its option's value and the file in which a symlink is planted (from a new folder).
    @Test(
        "a symlink planted at an output's path is replaced by the file; the file it pointed to is untouched",
        arguments: [
            (["--trace", "out"], "out/flow.trace.json"),
            (["--trace", "out"], "out/flow.html"),
            (["--report-html", "r.html"], "r.html"),
            (["--report-junit", "r.xml"], "r.xml"),
            (["--cookie-jar", "jar.txt"], "jar.txt"),
        ])
    func symlinkIsReplaced(arguments: [String], planted: String) async throws {
        try await withDemoServer { server in
            let folder = try Self.folder()
            try FileManager.default.createDirectory(atPath: folder + "/out", withIntermediateDirectories: true)
            let victim = folder + "/victim.txt"
            try Data("# not to be overwritten\n".utf8).write(to: URL(fileURLWithPath: victim))
            try FileManager.default.createSymbolicLink(atPath: folder + "/" + planted, withDestinationPath: victim)
            let file = try Self.workflow(server, path: "/cookies/set?a=1")
            let result = try await OrchestraExecutable.run(
                ["run", file, arguments[0], folder + "/" + arguments[1]])
            #expect(result.status == 0, "\(result)")
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "# not to be overwritten\n")
            #expect(!Self.isSymlink(folder + "/" + planted), "\(result)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + planted)).count > 30)
        }
    }

    @Test("a --cookie-jar file is read under the input-file limit: a larger one is refused before anything is sent")
    func cookieJarFileSize() async throws {
        try await withDemoServer { server in
            let jar = try Self.folder() + "/jar.txt"
            try Data(("# Netscape HTTP Cookie File\n" + String(repeating: "#\n", count: 1_000)).utf8).write(
                to: URL(fileURLWithPath: jar))
            let result = try await OrchestraExecutable.run(
                ["run", try Self.workflow(server), "--cookie-jar", jar],
                environment: ["ORCHESTRA_INPUT_FILE_LIMIT": "1000"])
            #expect(result.status == 2, "\(result)")
            #expect(
                result.stderr.contains("orchestra run: error: --cookie-jar: \(jar): larger than 1000 bytes"),
                "\(result)")
            #expect(server.requestCount == 0)
        }
    }

    @Test("a report to /dev/stdout or /dev/null is written into the stream, never replacing it")
    func streams() async throws {
        try await withDemoServer { server in
            let result = try await OrchestraExecutable.run([
                "run", try Self.workflow(server), "--report-junit", "/dev/stdout", "--report-html", "/dev/null",
            ])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("<testsuites name=\"flow\""), "\(result)")
            #expect(Self.isSymlink("/dev/stdout"))
            let type = try FileManager.default.attributesOfItem(atPath: "/dev/null")[.type] as? FileAttributeType
            #expect(type == .typeCharacterSpecial)
            let left = try FileManager.default.contentsOfDirectory(atPath: "/dev").filter {
                $0.hasPrefix(".orchestra-")
            }
            #expect(left.isEmpty, "\(left)")
        }
    }

    @Test(
        "a new cookie jar is 0600, an existing file keeps its mode (jar and report)",
        arguments: [
            ("--cookie-jar", nil, 0o600), ("--cookie-jar", 0o600, 0o600), ("--cookie-jar", 0o640, 0o640),
            ("--report-junit", 0o600, 0o600), ("--report-html", 0o604, 0o604),
        ] as [(String, Int?, Int)])
    func modes(option: String, existing: Int?, expected: Int) async throws {
        try await withDemoServer { server in
            let path = try Self.folder() + "/out.txt"
            if let existing {
                try Data("# Netscape HTTP Cookie File\n".utf8).write(to: URL(fileURLWithPath: path))
                try FileManager.default.setAttributes([.posixPermissions: existing], ofItemAtPath: path)
            }
            let result = try await OrchestraExecutable.run(
                ["run", try Self.workflow(server, path: "/cookies/set?sid=s3cret"), option, path])
            #expect(result.status == 0, "\(result)")
            let mode = try Self.mode(path)
            #expect(mode == expected, "\(String(mode, radix: 8))")
            if option == "--cookie-jar" {
                #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\tsid\ts3cret"))
            }
        }
    }

    @Test(
        "a cookie flood (4,000 cookies of 3 KB in 200 responses, then 1,000 in one) leaves a bounded jar and Cookie header"
    )
    func cookieFlood() async throws {
        let value = String(repeating: "v", count: 3_000)
        let handler: RawHTTPServer.Handler = { request in
            if request.target.hasPrefix("/set/") {
                let batch = request.target.dropFirst("/set/".count)
                return .response(
                    status: 200, headers: (0..<20).map { ("Set-Cookie", "c\(batch)_\($0)=\(value); Path=/") },
                    body: "{}")
            }
            if request.target == "/many" {
                return .response(status: 200, headers: (0..<1_000).map { ("Set-Cookie", "m\($0)=1") }, body: "{}")
            }
            return .response(status: 200, headers: [("Content-Type", "application/json")], body: "{}")
        }
        try await withRawHTTPServer(handler) { server in
            let sets = (0..<200).map { "  - { id: s\($0), url: \"\(server.url("/set/\($0)"))\" }" }
            let file = try WorkflowCommandTests.workflowFile(
                "steps:\n" + sets.joined(separator: "\n") + """

                      - { id: mid, needs: [\((0..<200).map { "s\($0)" }.joined(separator: ", "))], url: "\(server.url("/mid"))" }
                      - { id: many, needs: mid, url: "\(server.url("/many"))" }
                      - { id: last, needs: many, url: "\(server.url("/last"))" }
                    """)
            let jar = try Self.folder() + "/jar.txt"
            let result = try await OrchestraExecutable.run(["run", file, "--cookie-jar", jar])
            #expect(result.status == 0, "\(result)")
            // After the 200 responses: 50 cookies of 3 KB kept, two of them sent.
            let mid = try #require(server.requests.last { $0.target == "/mid" }?.header("Cookie"))
            #expect(mid.utf8.count <= 8_190 && mid.split(separator: ";").count == 2, "\(mid.utf8.count) bytes")
            // After 1,000 in one response: the first 50 kept, in place of the large ones.
            let last = try #require(server.requests.last { $0.target == "/last" }?.header("Cookie"))
            #expect(last == (0..<50).map { "m\($0)=1" }.joined(separator: "; "))
            let lines = try String(contentsOfFile: jar, encoding: .utf8).split(separator: "\n").filter {
                !$0.hasPrefix("# ")
            }
            #expect(lines.count == 50, "one host keeps 50 cookies")
        }
    }
}
