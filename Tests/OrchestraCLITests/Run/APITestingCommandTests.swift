import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `orchestra run` as an API testing tool: assertions, `--verbose`, secrets, the cookie jar and
/// form bodies, against the demo server.
@Suite("orchestra run: assertions, verbose, cookies, secrets", .serialized, .timeLimit(.minutes(5)), .takesTurns)
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
                  # Many blocks written at once: under ThreadSanitizer this caught a race in the log's lock.
                  - { id: list, url: "{{vars.base}}/list/40", auth: false, captures: { items: $.items } }
                  - { id: each, for_each: "{{list.items}}", url: "{{vars.base}}/users/{{item}}", auth: false }
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

    @Test(
        "cookies set on a redirect reach later steps over each HTTP client, however it delivers repeated Set-Cookie lines",
        arguments: ["asynchttpclient", "urlsession"])
    func cookiesOverEachTransport(transport: String) async throws {
        try await withDemoServer { server in
            let base = server.baseURL.absoluteString
            let file = try WorkflowCommandTests.workflowFile(
                """
                steps:
                  - { id: set, url: "\(base)/cookies/set?a=1&b=two" }
                  - { id: get, needs: set, url: "\(base)/cookies", assert: [ { $.cookies: { equals: { a: "1", b: two } } } ] }
                """)
            let output = try await OrchestraExecutable.run(["run", file, "--transport", transport])
            #expect(output.status == 0, "\(output)")
        }
    }

    @Test("basic_auth against the demo server's /basic-auth: the right password passes, a wrong one is a 401")
    func basicAuth() async throws {
        try await withDemoServer { server in
            let base = server.baseURL.absoluteString
            let file = try WorkflowCommandTests.workflowFile(
                """
                basic_auth: { user: ada, password: "{{env.ORCHESTRA_TEST_PASSWORD}}" }
                steps:
                  - { id: ok, url: "\(base)/basic-auth/ada/p%20w", assert: [ { $.authenticated: true }, { $.user: ada } ] }
                  - { id: wrong, url: "\(base)/basic-auth/ada/other", expect: 401 }
                """)
            let output = try await OrchestraExecutable.run(
                ["run", file, "--output", "json"], environment: ["ORCHESTRA_TEST_PASSWORD": "p w"])
            #expect(output.status == 0, "\(output)")
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

    @Test(
        "--data runs the workflow once per row with one login; --output json lists the rows; a row without a used column exits 2"
    )
    func dataRun() async throws {
        try await withDemoServer { server in
            let base = server.baseURL.absoluteString
            let example = WorkflowCommandTests.example("data-driven.yaml")
            let rows = WorkflowCommandTests.example("signup-rows.csv")
            let text = try await OrchestraExecutable.run([
                "run", example, "--data", rows, "--parallel", "3", "--var", "base=\(base)", "--no-color",
            ])
            #expect(text.status == 0, "\(text)")
            #expect(text.stdout.contains("3 rows × 3 steps: 3 succeeded"), "\(text)")
            #expect(text.stdout.contains("auth: 1 login"), "\(text)")
            #expect(server.loginCalls == 1)
            let json = try await OrchestraExecutable.run([
                "run", example, "--data", rows, "--var", "base=\(base)", "--output", "json",
            ])
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
            let listed = try #require(document["rows"] as? [[String: Any]])
            #expect(listed.map { ($0["data"] as? [String: String])?["user"] } == ["ada", "grace", "Lin, Mei"])
            #expect((document["summary"] as? [String: Any])?["succeeded"] as? Int == 3)
            let partial = try WorkflowCommandTests.workflowFile(
                #"[{"user":"ada","email":"a@x","plan":"pro"},{"user":"bo"}]"#, name: "rows.json")
            let missing = try await OrchestraExecutable.run([
                "run", example, "--data", partial, "--var", "base=\(base)",
            ])
            #expect(missing.status == 2, "\(missing)")
            #expect(missing.stderr.contains("row 2 has no 'email' ({{data.email}} uses it)"), "\(missing)")
            let noData = try await OrchestraExecutable.run(["validate", example])
            #expect(noData.status == 2 && noData.stderr.contains("run with --data"), "\(noData)")
            let validated = try await OrchestraExecutable.run(["validate", example, "--data", rows])
            #expect(validated.status == 0, "validate takes --data too: \(validated)")
            let validatedPartial = try await OrchestraExecutable.run(["validate", example, "--data", partial])
            #expect(validatedPartial.status == 2 && validatedPartial.stderr.contains("row 2 has no 'email'"))
            let badParallel = try await OrchestraExecutable.run(["run", example, "--data", rows, "--parallel", "0"])
            #expect(
                badParallel.status == 2 && badParallel.stderr.contains("--parallel must be at least 1"),
                "\(badParallel)")
        }
    }

    @Test("--report-junit writes well-formed JUnit XML and --report-html a page with every step and failed assertion")
    func reports() async throws {
        try await withDemoServer { server in
            let file = try WorkflowCommandTests.workflowFile(
                """
                name: Report <check> & co
                steps:
                  - { id: list, url: "\(server.baseURL.absoluteString)/album", captures: { images: $.images } }
                  - id: image
                    for_each: "{{list.images}}"
                    url: "\(server.baseURL.absoluteString){{item.path | raw}}"
                  - { id: bad, url: "\(server.baseURL.absoluteString)/users/1", assert: [ { $.name: "Nobody \\u0001" } ] }
                  - { id: after, url: "\(server.baseURL.absoluteString)/users/2", needs: bad }
                """)
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
            let xmlPath = folder.appendingPathComponent("junit.xml").path
            let htmlPath = folder.appendingPathComponent("report.html").path
            let output = try await OrchestraExecutable.run([
                "run", file, "--report-junit", xmlPath, "--report-html", htmlPath,
            ])
            #expect(output.status == 1, "\(output)")
            let xml = try Data(contentsOf: URL(fileURLWithPath: xmlPath))
            #if canImport(FoundationXML) || os(macOS)
            let document = try XMLDocument(data: xml)
            let cases = try document.nodes(forXPath: "//testcase")
            let images = (try? document.nodes(forXPath: "//testcase[starts-with(@name, 'image[')]")) ?? []
            #expect(cases.count == 4 + images.count && images.count >= 2, "a case per step and per element")
            let failure = try document.nodes(forXPath: "//testcase[@name='bad']/failure").first as? XMLElement
            #expect(failure?.attribute(forName: "type")?.stringValue == "AssertionFailure")
            #expect(
                failure?.stringValue?.contains(#"$.name == "Nobody \u0001": got "User 1""#) == true,
                "\(String(describing: failure?.stringValue))")
            #expect(try document.nodes(forXPath: "//testcase[@name='after']/skipped").count == 1)
            let suites = try document.nodes(forXPath: "/testsuites").first as? XMLElement
            #expect(suites?.attribute(forName: "name")?.stringValue == "Report <check> & co")
            #expect(suites?.attribute(forName: "failures")?.stringValue == "1")
            #endif
            let html = try String(contentsOfFile: htmlPath, encoding: .utf8)
            #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("Report &lt;check&gt; &amp; co"))
            #expect(
                html.contains("<code>image[0]</code>") && html.contains("class=\"track\""), "the steps and the timeline"
            )
            #expect(html.contains("✗ <code>$.name == &quot;Nobody"), "the failed assertion")
        }
    }
}
