import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra run`, `validate` and `graph`, run as the built executable against an in-process
/// demo server.
@Suite("orchestra run / validate / graph", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct WorkflowCommandTests {
    static let examples = [
        "album.yaml", "login-profile.yaml", "users-orders.json", "flaky-retry.yaml", "api-test.yaml",
        "form-login-cookies.yaml", "resumable.yaml", "distributed.yaml", "api-tour.yaml",
    ]

    static func example(_ name: String) -> String {
        OrchestraExecutable.packageRoot.appendingPathComponent("Examples/\(name)").path
    }

    /// Writes `text` to a fresh file and returns its path: in a folder of its own, inside one
    /// folder per test process that is removed as the process exits (each run left thousands of
    /// `orchestra-wf-…` folders in the temporary directory before).
    static func workflowFile(_ text: String, name: String = "flow.yaml") throws -> String {
        let folder = TestFiles.root.appendingPathComponent("wf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// Runs the example `name` against `server` with `--output json`, expects exit 0, and
    /// returns the document it printed.
    static func jsonReport(of name: String, server: DemoServer) async throws -> [String: Any] {
        let output = try await OrchestraExecutable.run([
            "run", example(name), "--var", "base=\(server.baseURL.absoluteString)", "--output", "json",
        ])
        #expect(output.status == 0, "\(output)")
        return try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output)")
    }

    @Test("each example runs against the demo server and exits 0", arguments: examples)
    func examplesRun(name: String) async throws {
        try await withDemoServer { server in
            // Each example also writes a JUnit report, as CI would ask for.
            let report = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-\(UUID()).xml").path
            defer { try? FileManager.default.removeItem(atPath: report) }
            let output = try await OrchestraExecutable.run([
                "run", Self.example(name), "--var", "base=\(server.baseURL.absoluteString)", "--var",
                "key=\(UUID().uuidString)", "--report-junit", report,
            ])
            #expect(output.status == 0, "\(output)")
            let junit = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
            #expect(junit.contains(#"<testsuites name="#) && junit.contains(#"failures="0""#), "\(junit)")
            let steps = output.stdout.split(separator: "\n").filter { $0.hasPrefix("✓") }
            #expect(!steps.isEmpty, "\(output)")
            #expect(!output.stdout.contains("✗"), "\(output)")
            #expect(output.stdout.contains("succeeded"), "\(output)")
            #expect(server.requestCount >= steps.count)
            if name == "login-profile.yaml" {
                #expect(server.loginCalls == 1)
                #expect(output.stdout.contains("/users/42"), "the user step used profile's capture: \(output)")
            }
            if name == "api-tour.yaml" {
                // include:, until:, paginate: streamed into for_each, schema: and when: together.
                #expect(output.stdout.contains("export_done") && output.stdout.contains("3 polls"), "\(output)")
                #expect(output.stdout.contains("45 requests sent, 45 succeeded"), "\(output)")
                #expect(output.stdout.contains("– notify  ") && output.stdout.contains("was false"), "\(output)")
            }
            if name == "flaky-retry.yaml" {
                #expect(output.stdout.contains("3 attempts"), "\(output)")
            }
        }
    }

    @Test("--transport: a workflow runs over each HTTP client", arguments: ["asynchttpclient", "urlsession"])
    func eachTransport(transport: String) async throws {
        try await withDemoServer { server in
            let output = try await OrchestraExecutable.run([
                "run", Self.example("login-profile.yaml"), "--var", "base=\(server.baseURL.absoluteString)",
                "--transport", transport,
            ])
            #expect(output.status == 0, "\(output)")
            #expect(!output.stdout.contains("✗") && output.stdout.contains("succeeded"), "\(output)")
            #expect(output.stdout.contains("/users/42"), "a capture of one response built the next request: \(output)")
            #expect(server.loginCalls == 1)
        }
    }

    @Test(
        "redirects against the demo server: 307/308 re-send the POST body, 302 turns it into a GET, follow_redirects: false returns the 302, an 11th hop fails",
        arguments: ["asynchttpclient", "urlsession"])
    func redirects(transport: String) async throws {
        try await withDemoServer { server in
            let file = try Self.workflowFile(
                """
                vars: { base: "http://127.0.0.1" }
                steps:
                  - id: post307
                    method: POST
                    url: "{{vars.base}}/redirect-to?url=/anything&status_code=307"
                    body: { keep: me }
                    captures: { method: $.method, keep: $.json.keep }
                  - id: post308
                    method: POST
                    url: "{{vars.base}}/redirect-to?url=/anything&status_code=308"
                    body: { keep: me }
                    captures: { method: $.method, keep: $.json.keep }
                  - id: post302
                    method: POST
                    url: "{{vars.base}}/redirect-to?url=/anything&status_code=302"
                    body: { keep: me }
                    captures: { method: $.method, length: $.bodyLength }
                  - id: manual
                    url: "{{vars.base}}/redirect-to?url=/next&status_code=302"
                    follow_redirects: false
                    expect: 302
                    captures: { where: { header: Location } }
                  - { id: ten, url: "{{vars.base}}/redirect/10" }
                  - { id: eleven, url: "{{vars.base}}/redirect/11" }
                """)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--transport", transport, "--output",
                "json",
            ])
            #expect(output.status == 1, "only 'eleven' fails: \(output)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output)")
            let steps = try #require(document["steps"] as? [[String: Any]])
            let byID = Dictionary(uniqueKeysWithValues: steps.map { ($0["id"] as? String ?? "", $0) })
            func captures(_ id: String) -> [String: Any] { byID[id]?["captures"] as? [String: Any] ?? [:] }
            func redirects(_ id: String) -> [[String: Any]] { byID[id]?["redirects"] as? [[String: Any]] ?? [] }
            let base = server.baseURL.absoluteString
            for id in ["post307", "post308"] {
                #expect(
                    captures(id)["method"] as? String == "POST" && captures(id)["keep"] as? String == "me",
                    "\(id): \(byID[id] ?? [:])")
                #expect(
                    redirects(id).count == 1 && redirects(id).first?["location"] as? String == "\(base)/anything",
                    "\(id)")
                #expect(byID[id]?["attempts"] as? Int == 1)
            }
            #expect(
                redirects("post307").first?["status"] as? Int == 307
                    && redirects("post308").first?["status"] as? Int == 308)
            #expect(
                captures("post302")["method"] as? String == "GET" && captures("post302")["length"] as? Int == 0,
                "\(byID["post302"] ?? [:])")
            #expect(
                byID["manual"]?["status"] as? Int == 302 && captures("manual")["where"] as? String == "/next",
                "\(byID["manual"] ?? [:])")
            #expect(redirects("manual").isEmpty)
            #expect(byID["ten"]?["state"] as? String == "succeeded" && redirects("ten").count == 10)
            #expect(redirects("ten").last?["location"] as? String == "\(base)/get")
            let eleven = try #require(byID["eleven"])
            #expect(eleven["state"] as? String == "failed")
            let error = eleven["error"] as? String ?? ""
            #expect(
                error.contains("too many redirects") && error.contains("11th") && error.contains("\(base)/get"),
                "\(error)")
        }
    }

    @Test(
        "control characters and bidi overrides from the file or the server are printed as visible escapes, never sent to the terminal"
    )
    func terminalSafety() async throws {
        try await withDemoServer { server in
            let file = try Self.workflowFile(
                #"""
                name: "title\e[2J"
                vars: { base: "http://127.0.0.1" }
                steps:
                  - id: echo
                    method: POST
                    url: "{{vars.base}}/echo"
                    body: "\e[31mred\u202Eevil\u0007"
                    expect: 201
                """#)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--no-color",
            ])
            #expect(output.status == 1, "\(output)")
            #expect(
                !output.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" || $0 == "\u{07}" },
                "\(output)")
            #expect(output.stdout.contains(#"title\u{1B}[2J"#), "\(output)")
            #expect(
                output.stdout.contains(#"\u{1B}[31mred\u{202E}evil\u{7}"#),
                "the server's body, quoted in the error: \(output)")

            let bad = try Self.workflowFile("limit: \"\\e[2J\"\nsteps: [{ id: a, url: \"http://x.test\" }]\n")
            let refused = try await OrchestraExecutable.run(["validate", bad])
            #expect(refused.status == 2, "\(refused)")
            #expect(
                !refused.stderr.unicodeScalars.contains("\u{1B}") && refused.stderr.contains(#"\u{1B}[2J"#),
                "\(refused)")
        }
    }

    @Test("--transport refuses a client it does not know and lists the choices")
    func unknownTransport() async throws {
        let output = try await OrchestraExecutable.run(["run", Self.example("album.yaml"), "--transport", "curl"])
        #expect(output.status == 2, "a usage error: \(output)")
        #expect(
            output.stderr.contains("curl") && output.stderr.contains("asynchttpclient")
                && output.stderr.contains("urlsession"), "\(output)")
        #expect(output.stdout.isEmpty, "nothing was run")
    }

    /// util-linux `script`, which runs a command on a pseudo-terminal.
    static let script = URL(fileURLWithPath: "/usr/bin/script")

    /// The arguments of ``script`` that run `orchestra` with `arguments` on a pseudo-terminal.
    /// `exec`: `orchestra` replaces the shell, so it alone gets what the terminal sends (Ctrl-C).
    static func onATerminal(_ arguments: [String]) -> [String] {
        let command = ([OrchestraExecutable.url.path] + arguments)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            .joined(separator: " ")
        // -e: script exits with the command's status; its transcript goes to /dev/null.
        return ["-qec", "exec " + command, "/dev/null"]
    }

    @Test(
        "on a terminal, a for_each step shows a progress bar redrawn in place and erased before its line",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: script.path), "needs util-linux script for a terminal")
    )
    func progressOnATerminal() async throws {
        try await withDemoServer { server in
            let output = try await OrchestraExecutable.run(
                Self.onATerminal(["run", Self.example("album.yaml"), "--var", "base=\(server.baseURL.absoluteString)"]),
                executable: Self.script
            )
            #expect(output.status == 0, "\(output)")
            let screen = output.stdout
            let bars = (0...8).map {
                "  image [" + String(repeating: "█", count: $0 * 2) + String(repeating: "░", count: 16 - $0 * 2)
                    + "] \($0)/8"
            }
            var position = screen.startIndex
            for bar in bars {
                let found = try #require(
                    screen.range(of: "\r" + bar, range: position..<screen.endIndex),
                    "'\(bar)', redrawn in place, in order:\n\(output)")
                position = found.upperBound
            }
            let erased = "\r" + String(repeating: " ", count: bars[8].count) + "\r✓ image "
            #expect(
                screen[position...].hasPrefix(erased),
                "the bar is erased and the step's line takes its place:\n\(output)")
        }
    }

    @Test(
        "on a terminal with --verbose, no bar is drawn: it would cut the request blocks",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: script.path), "needs util-linux script for a terminal")
    )
    func noProgressBarWhenVerbose() async throws {
        try await withDemoServer { server in
            let output = try await OrchestraExecutable.run(
                Self.onATerminal([
                    "run", Self.example("album.yaml"), "--var", "base=\(server.baseURL.absoluteString)", "-v",
                ]),
                executable: Self.script
            )
            #expect(output.status == 0, "\(output)")
            #expect(output.stdout.contains("> GET ") && output.stdout.contains("✓ image "), "\(output)")
            #expect(!output.stdout.contains("  image ["), "no bar:\n\(output)")
        }
    }

    @Test("through a pipe, a for_each step prints no progress: only its line")
    func noProgressThroughAPipe() async throws {
        try await withDemoServer { server in
            let output = try await OrchestraExecutable.run([
                "run", Self.example("album.yaml"), "--var", "base=\(server.baseURL.absoluteString)",
            ])
            #expect(output.status == 0, "\(output)")
            #expect(!output.stdout.contains("\r") && !output.stdout.contains("/8"), "\(output)")
            #expect(output.stdout.contains("8 requests sent, 8 succeeded"), "\(output)")
        }
    }

    @Test("--output json prints one document with every step and the summary")
    func jsonOutput() async throws {
        try await withDemoServer { server in
            let document = try await Self.jsonReport(of: "users-orders.json", server: server)
            let steps = try #require(document["steps"] as? [[String: Any]])
            #expect(steps.map { $0["id"] as? String } == ["ada", "bob", "summary"])
            #expect(steps.allSatisfy { $0["state"] as? String == "succeeded" })
            let summary = try #require(steps.last?["captures"] as? [String: Any])
            #expect(summary["first"] as? Int == 101)
            #expect(summary["by"] as? String == "User 1")
            #expect(
                summary["type"] as? String == "application/json",
                "a header capture: /echo answers with the request's Content-Type")
            let totals = try #require(document["summary"] as? [String: Any])
            #expect(totals["succeeded"] as? Int == 3)
            #expect(totals["failed"] as? Int == 0)
        }
    }

    @Test("--output json lists the elements of a for_each step under its items")
    func jsonOutputOfAFanOut() async throws {
        try await withDemoServer { server in
            let document = try await Self.jsonReport(of: "album.yaml", server: server)
            let steps = try #require(document["steps"] as? [[String: Any]])
            #expect(steps.map { $0["id"] as? String } == ["album", "image", "done"])
            #expect(steps[0]["items"] == nil, "only a for_each step has items")
            let items = try #require(steps[1]["items"] as? [[String: Any]])
            #expect(items.map { $0["id"] as? String } == (0..<8).map { "image[\($0)]" })
            for (index, item) in items.enumerated() {
                #expect(item["state"] as? String == "succeeded")
                #expect(item["status"] as? Int == 200)
                #expect(item["attempts"] as? Int == 1)
                #expect(
                    (item["url"] as? String)?.hasSuffix("/images/\(index)?latency_ms=20&n=\(index)") == true, "\(item)")
                #expect(item["sent_ms"] is Double && item["ended_ms"] is Double, "\(item)")
                #expect(item["error"] is NSNull)
            }
            #expect(steps[1]["attempts"] as? Int == 8)
        }
    }

    @Test("a for_each step with a failing element says how many failed and lists them")
    func failingElement() async throws {
        try await withDemoServer { server in
            let file = try Self.workflowFile(
                """
                vars: { base: "http://127.0.0.1" }
                steps:
                  - { id: album, url: "{{vars.base}}/album", captures: { images: $.images } }
                  - id: image
                    for_each: "{{album.images}}"
                    url: "{{vars.base}}/images/{{item.index}}{{index}}"
                  - { id: done, url: "{{vars.base}}/album", needs: image }
                """)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--no-color",
            ])
            #expect(output.status == 1, "\(output)")
            // 00 and 11 … 77: /images/00 is image 0, the others do not exist.
            #expect(output.stdout.contains("8 requests sent, 1 succeeded"), "\(output)")
            #expect(
                output.stdout.contains("7 of 8 requests failed; first: image[1]: expected 2xx, got 404"), "\(output)")
            #expect(
                output.stdout.contains("✗ image[1]  GET \(server.baseURL.absoluteString)/images/11 → 404"), "\(output)")
            #expect(output.stdout.contains("… and 2 more failed"), "\(output)")
            #expect(output.stdout.contains("skipped because 'image' did not succeed"), "\(output)")
        }
    }

    @Test("--trace writes a trace with one complete event per sent step and no overlap in a lane")
    func trace() async throws {
        try await withDemoServer { server in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "orchestra-trace-\(UUID().uuidString)")
            let output = try await OrchestraExecutable.run([
                "run", Self.example("album.yaml"), "--var", "base=\(server.baseURL.absoluteString)", "--trace",
                folder.path,
            ])
            #expect(output.status == 0, "\(output)")
            let trace = try ChromeTrace(contentsOf: folder.appendingPathComponent("album.trace.json"))
            #expect(trace.completeEvents.count == 10, "album, one per image (8) and done")
            #expect(trace.overlapsInALane.isEmpty, "\(trace.overlapsInALane)")
            let page = try String(contentsOf: folder.appendingPathComponent("album.html"), encoding: .utf8)
            #expect(page.contains("image[3]"))
        }
    }

    @Test("--trace naming a file is refused before anything is sent")
    func traceIntoAFile() async throws {
        let file = Self.example("album.yaml")
        let output = try await OrchestraExecutable.run([
            "run", file, "--var", "base=http://127.0.0.1:1", "--trace", file,
        ])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("orchestra run: error: --trace: '\(file)' is a file, not a folder"), "\(output)")
        #expect(output.stdout.isEmpty, "nothing was run")
    }

    @Test(
        "a failing step exits 1, names the reason, and independent steps still complete",
        arguments: ["asynchttpclient", "urlsession"])
    func failingStep(transport: String) async throws {
        try await withDemoServer { server in
            let file = try Self.workflowFile(
                """
                vars: { base: "http://127.0.0.1:1" }
                steps:
                  - id: missing
                    url: "{{vars.base}}/users/abc"
                    expect: 200
                  - id: after
                    needs: missing
                    url: "{{vars.base}}/album"
                  - id: independent
                    url: "{{vars.base}}/album"
                  - id: refused
                    url: "http://127.0.0.1:1/album"
                    timeout: 3s
                """)
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--transport", transport,
            ])
            #expect(output.status == 1, "\(output)")
            #expect(output.stdout.contains("expected 200, got"), "\(output)")
            #expect(output.stdout.contains("connection refused"), "\(output)")
            #expect(output.stdout.contains("127.0.0.1:1"), "\(output)")
            #expect(output.stdout.contains("skipped because 'missing'"), "\(output)")
            #expect(output.stdout.contains("✓ independent"), "\(output)")
            #expect(output.stdout.contains("1 succeeded, 2 failed, 1 skipped"), "\(output)")
        }
    }

    struct BadInput: Sendable, CustomStringConvertible {
        var name: String
        var yaml: String
        /// Texts the message must contain (file, line, step, field, reason).
        var expected: [String]
        var description: String { name }
    }

    static let badInputs: [BadInput] = [
        BadInput(
            name: "syntax error", yaml: "steps:\n  - id: a\n    url: [unclosed\n",
            expected: ["flow.yaml:", "not valid YAML or JSON"]),
        BadInput(
            name: "unknown field",
            yaml: "steps:\n  - id: login\n    urll: \"http://x/\"\n    url: \"http://x/\"\n",
            expected: ["flow.yaml:3:5:", "step 'login'", "unknown field 'urll'", "did you mean 'url'?"]
        ),
        BadInput(
            name: "missing step",
            yaml: "steps:\n  - id: a\n    url: \"http://x/\"\n    needs: [nope]\n",
            expected: ["flow.yaml:4:13:", "step 'a', field 'needs'", "'nope'"]
        ),
        BadInput(
            name: "missing capture",
            yaml:
                "steps:\n  - id: a\n    url: \"http://x/\"\n    captures: { token: $.t }\n  - id: b\n    url: \"http://x/{{a.tokn}}\"\n",
            expected: ["flow.yaml:6:10:", "step 'b', field 'url'", "no capture 'tokn'", "did you mean 'token'?"]
        ),
        BadInput(
            name: "cycle",
            yaml:
                "steps:\n  - id: a\n    url: \"http://x/\"\n    needs: c\n  - id: b\n    url: \"http://x/\"\n    needs: a\n  - id: c\n    url: \"http://x/\"\n    needs: b\n",
            expected: ["flow.yaml:", "cycle", "→"]
        ),
        BadInput(
            name: "bad URL",
            yaml: "vars: { base: \"ftp://x\" }\nsteps:\n  - id: a\n    url: \"{{vars.base}}/a\"\n",
            expected: ["flow.yaml:4:10:", "step 'a', field 'url'", "only http and https"]
        ),
        BadInput(
            name: "limit below 1", yaml: "limit: 0\nsteps:\n  - id: a\n    url: \"http://x/\"\n",
            expected: ["flow.yaml:1:8:", "field 'limit'", "≥ 1, got '0'"]),
        BadInput(
            name: "for_each that is not a capture",
            yaml: "vars: { list: x }\nsteps:\n  - id: a\n    url: \"http://x/\"\n    for_each: \"{{vars.list}}\"\n",
            expected: ["flow.yaml:5:15:", "step 'a', field 'for_each'", "exactly one {{STEP.CAPTURE}}"]
        ),
        BadInput(
            name: "item outside for_each",
            yaml: "steps:\n  - id: a\n    url: \"http://x/\"\n    headers: { X-Item: \"{{item.path}}\" }\n",
            expected: ["flow.yaml:4:", "step 'a', field 'headers.X-Item'", "has no for_each"]
        ),
        BadInput(
            name: "unquoted template",
            yaml: "steps:\n  - id: a\n    url: {{vars.base}}\n",
            expected: ["flow.yaml:3:10:", "step 'a', field 'url'", "quote it"]
        ),
    ]

    @Test("bad input exits 2 with a message naming file, line, step and field; nothing is sent", arguments: badInputs)
    func badInput(_ input: BadInput) async throws {
        try await withDemoServer { server in
            let file = try Self.workflowFile(
                input.yaml.replacingOccurrences(of: "http://x/", with: "\(server.baseURL.absoluteString)/album"))
            let before = server.requestCount
            for command in ["run", "validate"] {
                let output = try await OrchestraExecutable.run([command, file])
                #expect(output.status == 2, "\(output)")
                for text in input.expected {
                    #expect(output.stderr.contains(text), "\(command): expected '\(text)' in:\n\(output)")
                }
                #expect(output.stdout.isEmpty, "\(output)")
            }
            #expect(server.requestCount == before, "nothing sent")
        }
    }

    @Test("a --var that no template uses is warned about, with the closest variable the file uses")
    func unusedVariableIsWarnedAbout() async throws {
        let file = try Self.workflowFile(
            """
            vars: { base: "http://x.test" }
            steps: [{ id: a, url: "{{vars.base}}/a" }]
            """)
        let output = try await OrchestraExecutable.run([
            "validate", file, "--var", "bsae=http://y.test", "--var", "base=http://z.test",
        ])
        #expect(output.status == 0, "a warning, not an error: \(output)")
        #expect(
            output.stderr.contains("warning: --var bsae: no template uses {{vars.bsae}} (did you mean 'base'?)"),
            "\(output)")
        #expect(!output.stderr.contains("--var base"), "a used variable is not warned about: \(output)")
    }

    @Test("- reads the workflow from standard input; an empty path or an empty file says so")
    func standardInputAndEmptyFiles() async throws {
        let file = try Self.workflowFile("steps: [{ id: a, url: \"http://x.test/a\" }]\n")
        let piped = try await OrchestraExecutable.run(
            ["-c", "cat \"$1\" | \"$0\" validate -", OrchestraExecutable.url.path, file],
            executable: URL(fileURLWithPath: "/bin/sh")
        )
        #expect(piped.status == 0 && piped.stdout.contains("ok — 1 step"), "\(piped)")
        let unnamed = try await OrchestraExecutable.run(["validate", ""])
        #expect(unnamed.status == 2 && unnamed.stderr.contains("no file given"), "\(unnamed)")
        let empty = try await OrchestraExecutable.run(["validate", "/dev/null"])
        #expect(empty.status == 2 && empty.stderr.contains("/dev/null: error: empty file"), "\(empty)")
    }

    @Test("{{env.NAME}} is read from the environment; an unset one is refused before anything is sent")
    func environmentVariables() async throws {
        let file = try HostileInputTests.file(
            Data("steps:\n  - { id: a, url: \"http://127.0.0.1:1/{{env.ORCHESTRA_TEST_PATH}}\" }\n".utf8))
        let set = try await OrchestraExecutable.run(["validate", file], environment: ["ORCHESTRA_TEST_PATH": "x"])
        #expect(set.status == 0 && set.stdout.contains("ok — 1 step"), "\(set)")
        let unset = try await OrchestraExecutable.run(["run", file])
        #expect(unset.status == 2, "\(unset)")
        #expect(
            unset.stderr.contains(":2:") && unset.stderr.contains("the environment variable 'ORCHESTRA_TEST_PATH'"),
            "\(unset)")
        #expect(!unset.stderr.contains("connection refused"), "nothing was sent: \(unset)")
    }

    @Test("--vars-file reads YAML and .env files; later files win, and --var wins over files")
    func variablesFiles() async throws {
        let flow = try HostileInputTests.file(
            Data("steps:\n  - { id: a, url: \"{{vars.base}}/{{vars.path}}\" }\n".utf8))
        let yaml = try HostileInputTests.file(
            Data("base: http://127.0.0.1:1\npath: from-yaml\n".utf8), name: "vars.yaml")
        let env = try HostileInputTests.file(Data("# local\npath=from-env\n".utf8), name: "local.env")
        // Port 1 refuses the connection: the report still shows the URL that was rendered.
        let fromFiles = try await OrchestraExecutable.run([
            "run", flow, "--output", "json", "--vars-file", yaml, "--vars-file", env,
        ])
        #expect(fromFiles.stdout.contains("http://127.0.0.1:1/from-env"), "\(fromFiles)")
        let overridden = try await OrchestraExecutable.run([
            "run", flow, "--output", "json", "--vars-file", yaml, "--vars-file", env, "--var", "path=from-var",
        ])
        #expect(overridden.stdout.contains("http://127.0.0.1:1/from-var"), "\(overridden)")
        let bad = try HostileInputTests.file(Data("path from-env\n".utf8), name: "bad.env")
        let refused = try await OrchestraExecutable.run(["run", flow, "--vars-file", bad])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("--vars-file: \(bad):1:1: error: expected NAME=value"), "\(refused)")
    }

    @Test("validate prints a summary of a valid file")
    func validate() async throws {
        let output = try await OrchestraExecutable.run(["validate", Self.example("album.yaml")])
        #expect(output.status == 0, "\(output)")
        #expect(
            output.stdout.contains("album.yaml: ok — 3 steps, 3 dependencies, 1 for_each step, limit 4"), "\(output)")
    }

    @Test("graph prints dot and mermaid with labels and implicit dependencies")
    func graph() async throws {
        let dot = try await OrchestraExecutable.run(["graph", Self.example("login-profile.yaml"), "--format", "dot"])
        #expect(dot.status == 0, "\(dot)")
        #expect(dot.stdout.hasPrefix("digraph"))
        #expect(dot.stdout.contains("\"profile\" [label=\"profile\\nGET /me"), "\(dot)")
        #expect(dot.stdout.contains("\"profile\" -> \"user\" [style=dashed, label=\"user_id\"]"), "\(dot)")
        let mermaid = try await OrchestraExecutable.run(["graph", Self.example("users-orders.json")])
        #expect(mermaid.status == 0, "\(mermaid)")
        #expect(mermaid.stdout.hasPrefix("flowchart LR"))
        #expect(mermaid.stdout.contains("n0 --> n2") && mermaid.stdout.contains("n1 --> n2"), "\(mermaid)")
        let fanOut = try await OrchestraExecutable.run(["graph", Self.example("album.yaml"), "--format", "dot"])
        #expect(
            fanOut.stdout.contains("\"image\" [label=\"image\\nfor each album.images\\nGET {{item.path | raw}}"),
            "\(fanOut)")
        #expect(fanOut.stdout.contains("\"album\" -> \"image\" [style=dashed, label=\"images\"]"), "\(fanOut)")
        let fanOutMermaid = try await OrchestraExecutable.run(["graph", Self.example("album.yaml")])
        #expect(fanOutMermaid.stdout.contains("n1[\"image<br/>for each album.images<br/>GET"), "\(fanOutMermaid)")
        let bad = try await OrchestraExecutable.run(["graph", Self.example("album.yaml"), "--format", "svg"])
        #expect(bad.status == 2, "a usage error: \(bad)")
    }
}

/// The folder of the files the command tests write, one per test process, removed when the
/// process exits normally.
enum TestFiles {
    static let root: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-tests-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestFiles.root) }
        return url
    }()
}
