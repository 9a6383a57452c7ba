import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import Testing

/// `orchestra run` as an API testing tool: assertions, `--verbose`, secrets, the cookie jar and
/// form bodies, against the demo server.
@Suite("orchestra run: assertions, verbose, cookies, secrets", .serialized, .timeLimit(.minutes(5)))
struct APITestingCommandTests {
    @Test("failing assertions exit 1 and list each check with what was expected and what came")
    func failingAssertions() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - id: user
                    url: "\(server.baseURL.absoluteString)/users/7"
                    assert:
                      - $.name: "User 7"
                      - $.orders: { count: 3 }
                      - $.id: { ">": 10 }
                      - header Content-Type: { contains: json }
                """)
            let text = try await OrchestraExecutable.run(["run", file, "--no-color"])
            #expect(text.status == 1, "\(text)")
            #expect(text.stdout.contains("2 of 4 assertions failed:"), "\(text)")
            #expect(text.stdout.contains("✗ $.orders count 3: got 2"), "\(text)")
            #expect(text.stdout.contains("✗ $.id > 10: got 7"), "\(text)")
            #expect(!text.stdout.contains("User 7\": got"), "a passing check is not listed: \(text)")
            let json = try await OrchestraExecutable.run(["run", file, "--output", "json"])
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
            let step = try #require((document["steps"] as? [[String: Any]])?.first)
            let checks = try #require(step["assertions"] as? [[String: Any]])
            #expect(checks.map { $0["passed"] as? Bool } == [true, false, false, true])
            #expect(checks[1]["operator"] as? String == "count" && checks[1]["actual"] as? String == "2")
        }
    }

    @Test("--verbose shows each request and response on stderr, credentials and secrets redacted")
    func verbose() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                vars: { base: "\(server.baseURL.absoluteString)", pass: "hunter2" }
                secrets: [pass]
                auth:
                  login: { url: "{{vars.base}}/login", token: $.access_token }
                steps:
                  - id: me
                    url: "{{vars.base}}/me"
                  - id: form
                    method: POST
                    url: "{{vars.base}}/anything/form?p={{vars.pass}}"
                    auth: false
                    form: { user: ada, password: "{{vars.pass}}" }
                  - id: binary
                    url: "{{vars.base}}/bytes/3000"
                    auth: false
                """)
            let output = try await OrchestraExecutable.run(["run", file, "-v"])
            #expect(output.status == 0, "\(output)")
            let log = output.stderr
            #expect(log.contains("* auth · "), "\(output)")
            #expect(log.contains("> POST \(server.baseURL.absoluteString)/login"), "\(output)")
            #expect(log.contains("* me · ") && log.contains("> Authorization: ***"), "\(output)")
            #expect(log.contains("< 200 OK"), "\(output)")
            #expect(log.contains(#"< {"user":{"id":42"#), "the response body: \(output)")
            #expect(log.contains("> user=ada&password=***"), "the form body, its secret redacted: \(output)")
            #expect(log.contains("/anything/form?p=***"), "\(output)")
            #expect(log.contains("< [3 KB, application/octet-stream]"), "\(output)")
            #expect(!log.contains("hunter2") && !output.stdout.contains("hunter2"), "\(output)")
            let quiet = try await OrchestraExecutable.run(["run", file])
            #expect(quiet.stderr.isEmpty, "\(quiet)")
        }
    }

    @Test("--cookie-jar saves the session a run was given and the next run sends it")
    func cookieJar() async throws {
        try await withDemoServer { server in
            let base = server.baseURL.absoluteString
            let jar = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-jar-\(UUID()).txt").path
            defer { try? FileManager.default.removeItem(atPath: jar) }
            let first = try await OrchestraExecutable.run([
                "run", WorkflowCommandTests.example("form-login-cookies.yaml"), "--var", "base=\(base)", "--cookie-jar",
                jar,
            ])
            #expect(first.status == 0, "\(first)")
            let saved = try String(contentsOfFile: jar, encoding: .utf8)
            #expect(saved.hasPrefix("# Netscape HTTP Cookie File"), "\(saved)")
            #expect(saved.contains("127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tada-42"), "\(saved)")
            let reader = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: c, url: "\(base)/cookies", assert: [ { $.cookies.session: ada-42 } ] }
                """)
            let second = try await OrchestraExecutable.run(["run", reader, "--cookie-jar", jar])
            #expect(second.status == 0, "\(second)")
            let withoutJar = try await OrchestraExecutable.run(["run", reader])
            #expect(withoutJar.status == 1, "a fresh run has no cookie: \(withoutJar)")
            try Data("127.0.0.1\tFALSE\t/\n".utf8).write(to: URL(fileURLWithPath: jar))
            let bad = try await OrchestraExecutable.run(["run", reader, "--cookie-jar", jar])
            #expect(bad.status == 2, "\(bad)")
            #expect(bad.stderr.contains("--cookie-jar") && bad.stderr.contains("line 1: expected 7"), "\(bad)")
        }
    }

    @Test("multipart and form bodies arrive as the demo server's httpbin echo reads them")
    func multipart() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - id: up
                    method: POST
                    url: "\(server.baseURL.absoluteString)/anything"
                    multipart:
                      - { name: title, value: "Grace" }
                      - { name: upload, file: data.bin, content_type: application/x-test }
                    assert:
                      - $.form.title: Grace
                      - $.files.upload: "data:application/octet-stream;base64,AP8A/w=="
                      - $.files: { contains: upload.meta }
                """)
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
            try Data([0, 255, 0, 255]).write(to: folder.appendingPathComponent("data.bin"))
            let output = try await OrchestraExecutable.run(["run", file, "--output", "json"])
            #expect(output.status == 0, "\(output)")
        }
    }
}
