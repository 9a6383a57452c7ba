import Foundation
import OrchestraWorkflow
import TestSupport
import Testing

/// Parses `text`, expecting it to be valid.
func parse(_ text: String, variables: [String: String] = [:]) throws -> Workflow {
    try Workflow.parse(text, file: "flow.yaml", variables: variables)
}

/// The errors `text` gives.
func errors(_ text: String) -> [WorkflowError] {
    do {
        _ = try Workflow.parse(text, file: "flow.yaml")
        return []
    } catch {
        return error.errors
    }
}

@Suite("Workflow files", .timeLimit(.minutes(1)), .takesTurns)
struct WorkflowParserTests {
    @Test func defaults() throws {
        let workflow = try parse("steps:\n  - id: a\n    url: \"http://x.test/a\"\n")
        #expect(workflow.limit == 8)
        #expect(workflow.failurePolicy == .continue)
        #expect(workflow.auth == nil)
        #expect(workflow.hostLimits.isEmpty)
        let step = try #require(workflow.step("a"))
        #expect(step.request.method == .get)
        #expect(step.expect.isEmpty && step.accepts(status: 204) && !step.accepts(status: 404))
        #expect(step.timeout == .seconds(30))
        #expect(step.retry.attempts == 1)
        #expect(step.usesAuth)
        #expect(step.location == SourceLocation(line: 2, column: 5))
    }

    static let full = """
        name: Full
        vars: { base: "http://127.0.0.1:8080", who: ada }
        limit: 4
        hosts: { "127.0.0.1:8080": 2 }
        failure: stop
        auth:
          login: { url: "{{vars.base}}/login", token: $.access_token, expires_in: $.expires_in }
          header: X-Token
          scheme: ""
          failure: { status: [200], body_contains: token_expired }
        steps:
          - id: login
            method: post
            url: "{{vars.base}}/users/{{vars.who}}"
            headers: { Accept: application/json }
            body: { name: "{{vars.who}}", n: 3, ok: true, none: null, list: [1, "two"] }
            captures: { token: "$.items[0].token" }
            expect: [200, 201]
            timeout: 500ms
            retry: { attempts: 3, backoff: 2s, max_delay: 10s }
            auth: false
          - id: next
            needs: login
            url: "{{vars.base}}/{{login.token}}"
            retry: 2
            timeout: 2
        """

    @Test func everyField() throws {
        let workflow = try parse(Self.full)
        #expect(workflow.name == "Full")
        #expect(workflow.variables == ["base": "http://127.0.0.1:8080", "who": "ada"])
        #expect(workflow.limit == 4)
        #expect(workflow.hostLimits.map(\.host) == ["127.0.0.1:8080"] && workflow.hostLimits[0].limit == 2)
        #expect(workflow.failurePolicy == .stop)
        let auth = try #require(workflow.auth)
        #expect(auth.header == "X-Token" && auth.scheme == "")
        #expect(auth.login.request.method == .post, "login defaults to POST")
        #expect(auth.failureStatuses == [200] && auth.failureBodyContains == "token_expired")
        #expect(
            auth.isFailure(status: 200, body: "{\"error\":\"token_expired\"}")
                && !auth.isFailure(status: 200, body: "{}"))
        let login = try #require(workflow.step("login"))
        #expect(login.request.method == .post)
        #expect(login.request.headers.map(\.name) == ["Accept"])
        #expect(login.captures.map(\.name) == ["token"])
        #expect(login.expect == [200, 201])
        #expect(login.timeout == .milliseconds(500))
        #expect(login.retry == RetrySettings(attempts: 3, backoff: .seconds(2), maxDelay: .seconds(10)))
        #expect(!login.usesAuth)
        guard case .json(let body)? = login.request.body else {
            Issue.record("JSON body expected")
            return
        }
        let rendered = try body.render(with: TemplateValues(variables: ["who": "ada"]))
        #expect(rendered.text == #"{"name":"ada","n":3,"ok":true,"none":null,"list":[1,"two"]}"#)
        let next = try #require(workflow.step("next"))
        #expect(next.needs == ["login"] && next.implicitNeeds.isEmpty)
        #expect(next.retry.attempts == 2 && next.timeout == .seconds(2))
        #expect(next.retry.maxDelay == .seconds(30), "max_delay's default")
    }

    @Test func hostLimitsMatchAnAuthorityOrAHostOnAnyPort() {
        let exact = HostLimit(host: "127.0.0.1:8080", limit: 1)
        let anyPort = HostLimit(host: "127.0.0.1", limit: 1)
        #expect(exact.matches(authority: "127.0.0.1:8080") && !exact.matches(authority: "127.0.0.1:9090"))
        #expect(anyPort.matches(authority: "127.0.0.1:9090") && anyPort.matches(authority: "127.0.0.1"))
        #expect(!anyPort.matches(authority: "127.0.0.2:9090"))
    }

    @Test func jsonIsReadByTheSameParser() throws {
        let json = """
            {"vars": {"base": "http://x.test"}, "limit": 2,
             "steps": [{"id": "a", "url": "{{vars.base}}/a", "captures": {"t": "$.t"}},
                       {"id": "b", "url": "{{vars.base}}/{{a.t}}", "expect": 204}]}
            """
        let workflow = try parse(json)
        #expect(workflow.limit == 2)
        #expect(workflow.step("b")?.implicitNeeds == ["a"])
        #expect(workflow.step("b")?.expect == [204])
    }

    @Test func variablesCanBeOverriddenAndAdded() throws {
        let workflow = try parse(
            "vars: { base: \"http://a.test\" }\nsteps:\n  - id: a\n    url: \"{{vars.base}}/{{vars.extra}}\"\n",
            variables: ["base": "http://b.test", "extra": "x"]
        )
        #expect(workflow.variables == ["base": "http://b.test", "extra": "x"])
    }

    struct Case: Sendable, CustomStringConvertible {
        var yaml: String
        var code: WorkflowError.Code
        var line: Int
        var step: String?
        var field: String?
        var message: String
        var description: String { message }
    }

    static let cases: [Case] = [
        Case(
            yaml: "stepz: []\n", code: .unknownField, line: 1, step: nil, field: "stepz",
            message: "did you mean 'steps'?"),
        Case(
            yaml: "steps: []\n", code: .invalidValue, line: 1, step: nil, field: "steps",
            message: "is empty; a workflow needs at least one step"),
        Case(
            yaml: "limit: 0\nsteps: []\n", code: .invalidValue, line: 1, step: nil, field: "limit",
            message: "must be an integer ≥ 1, got '0'"),
        Case(
            yaml: "limit: \"4\"\nsteps: []\n", code: .invalidValue, line: 1, step: nil, field: "limit",
            message: "quoted text"),
        Case(
            yaml: "hosts: { a: 0 }\nsteps: []\n", code: .invalidValue, line: 1, step: nil, field: "hosts.a",
            message: "≥ 1"),
        Case(
            yaml: "failure: maybe\nsteps: []\n", code: .invalidValue, line: 1, step: nil, field: "failure",
            message: "'continue' or 'stop'"),
        Case(
            yaml: "steps:\n  - url: \"http://x.test\"\n", code: .missingField, line: 2, step: nil, field: "id",
            message: "no 'id'"),
        Case(
            yaml: "steps:\n  - id: a\n", code: .missingField, line: 2, step: "a", field: "url", message: "missing 'url'"
        ),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n  - id: a\n    url: \"http://x.test\"\n",
            code: .duplicateStep, line: 4, step: "a", field: "id", message: "first at line 2"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"{{vars.bse}}/a\"\n", code: .unknownVariable, line: 3, step: "a",
            field: "url", message: "unknown variable 'bse'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test/{{b.c}}\"\n", code: .unknownStep, line: 3, step: "a",
            field: "url", message: "step 'b', which does not exist"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test/{{a}}\"\n", code: .invalidTemplate, line: 3, step: "a",
            field: "url", message: "is not a reference"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test/{{a.b\"\n", code: .invalidTemplate, line: 3, step: "a",
            field: "url", message: "without a closing"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"x.test/a\"\n", code: .invalidURL, line: 3, step: "a", field: "url",
            message: "http:// or https://"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http:///a\"\n", code: .invalidURL, line: 3, step: "a", field: "url",
            message: "has no host"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test:99999/a\"\n", code: .invalidURL, line: 3, step: "a",
            field: "url", message: "has port 99999; a port is 1 to 65535"),
        Case(
            yaml: "vars: { port: \"0\" }\nsteps:\n  - id: a\n    url: \"http://x.test:{{vars.port}}/a\"\n",
            code: .invalidURL, line: 4, step: "a", field: "url", message: "has port 0"),
        // A header value with a line break, literal or from a variable, is refused before anything is sent.
        Case(
            yaml: "steps:\n  - { id: a, url: \"http://x.test\", headers: { X-A: \"a\\nb\" } }\n", code: .invalidValue,
            line: 2, step: "a", field: "headers.X-A", message: "line break"),
        Case(
            yaml:
                "vars: { v: \"a\\r\\nX-Evil: 1\" }\nsteps:\n  - { id: a, url: \"http://x.test\", headers: { X-A: \"{{vars.v}}\" } }\n",
            code: .invalidValue, line: 3, step: "a", field: "headers.X-A", message: "line break"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    expect: 600\n", code: .invalidValue, line: 4,
            step: "a", field: "expect", message: "100–599"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    timeout: 0s\n", code: .invalidValue, line: 4,
            step: "a", field: "timeout", message: "more than 0"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    timeout: soon\n", code: .invalidValue, line: 4,
            step: "a", field: "timeout", message: "500ms, 5s"),
        // Durations out of range are refused naming the range, never overflowed (1e10 s crashed).
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    timeout: 1e10\n", code: .invalidValue, line: 4,
            step: "a", field: "timeout", message: "must be more than 0 to 24 h, got '1e10'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    timeout: 99999999999999999999s\n",
            code: .invalidValue, line: 4, step: "a", field: "timeout", message: "to 24 h"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    timeout: 25h\n", code: .invalidValue, line: 4,
            step: "a", field: "timeout", message: "to 24 h, got '25h'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { attempts: 3, backoff: 1e10 }\n",
            code: .invalidValue, line: 4, step: "a", field: "retry.backoff", message: "must be 0 to 30 s, got '1e10'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { attempts: 3, backoff: 31s }\n",
            code: .invalidValue, line: 4, step: "a", field: "retry.backoff", message: "0 to 30 s"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { attempts: 0 }\n", code: .invalidValue,
            line: 4, step: "a", field: "retry.attempts", message: "≥ 1"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { attempts: 3, max_delay: 2h }\n",
            code: .invalidValue, line: 4, step: "a", field: "retry.max_delay", message: "must be 0 to 60 min, got '2h'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { attempts: 3, max_delay: -1s }\n",
            code: .invalidValue, line: 4, step: "a", field: "retry.max_delay", message: "must be 0 or more, got '-1s'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { attempts: 3, max_delay: 1e300 }\n",
            code: .invalidValue, line: 4, step: "a", field: "retry.max_delay", message: "got '1e300'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    retry: { max_delay: soon }\n",
            code: .invalidValue, line: 4, step: "a", field: "retry.max_delay", message: "must be a duration"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    captures: { t: access_token }\n",
            code: .invalidCapturePath, line: 4, step: "a", field: "captures.t", message: "must start with '$'"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    captures: { t: \"$.a[x]\" }\n",
            code: .invalidCapturePath, line: 4, step: "a", field: "captures.t", message: "not an index"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    method: \"GE T\"\n", code: .invalidValue, line: 4,
            step: "a", field: "method", message: "not an HTTP method"),
        Case(
            yaml: "steps:\n  - id: a\n    url: {{vars.base}}\n", code: .invalidValue, line: 3, step: "a", field: "url",
            message: "quote it"),
        Case(
            yaml: "steps:\n  - id: a\n    url: {{vars.base}}/a\n", code: .syntax, line: 3, step: nil, field: nil,
            message: "templates must be quoted"),
        // A quote left open is reported where it opened, not where libyaml stopped (issue 32).
        Case(
            yaml:
                "steps:\n  - id: a\n    url: \"http://x.test/\n    method: GET\n  - id: b\n    url: \"http://x.test/\"\n",
            code: .syntax, line: 3, step: nil, field: nil,
            message: "the '\"' opened here is not closed on its line; the quoted value runs on to line 6"),
        Case(
            yaml: "steps:\n  - id: a\n    url: 'it''s open\n    method: GET\n", code: .syntax, line: 3, step: nil,
            field: nil, message: "the \"'\" opened here is not closed on its line; the quoted value runs on to line 5"),
        // libyaml's reader errors name the character and its line (they were printed without one).
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test/\u{1B}[31m\"\n", code: .syntax, line: 3, step: nil,
            field: nil, message: "control characters are not allowed (U+001B)"),
        Case(
            yaml: "name: ok\nsteps:\n  - id: \"\u{7}\"\n", code: .syntax, line: 3, step: nil, field: nil,
            message: "(U+0007)"),
        Case(
            yaml: "steps:\n\t- id: a\n", code: .syntax, line: 2, step: nil, field: nil,
            message: "indent with spaces: YAML does not allow tabs"),
        Case(
            yaml: "steps:\n  - id: a\n\turl: \"http://x.test\"\n", code: .syntax, line: 3, step: nil, field: nil,
            message: "indent with spaces"),
        Case(
            yaml: String(repeating: "[", count: 100_000), code: .syntax, line: 1, step: nil, field: nil,
            message: "nested more than 1000 levels deep"),
        Case(
            yaml:
                "auth:\n  login: { url: \"http://x.test/{{a.t}}\", token: $.t }\nsteps:\n  - id: a\n    url: \"http://x.test\"\n    captures: { t: $.t }\n",
            code: .invalidTemplate, line: 2, step: nil, field: "auth.login.url", message: "only {{vars.NAME}}"
        ),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    needs: a\n", code: .cycle, line: 4, step: "a",
            field: "needs", message: "needs itself"),
        // for_each: exactly one quoted {{STEP.CAPTURE}} of another step.
        Case(
            yaml: forEach("{{vars.base}}"), code: .invalidTemplate, line: 7, step: "b", field: "for_each",
            message: "exactly one {{STEP.CAPTURE}}"),
        Case(
            yaml: forEach("{{a.list}}{{a.list}}"), code: .invalidTemplate, line: 7, step: "b", field: "for_each",
            message: "exactly one {{STEP.CAPTURE}}"),
        Case(
            yaml: forEach("x{{a.list}}"), code: .invalidTemplate, line: 7, step: "b", field: "for_each",
            message: "found {{a.list}}"),
        Case(
            yaml: forEach("{{item}}"), code: .invalidTemplate, line: 7, step: "b", field: "for_each",
            message: "exactly one {{STEP.CAPTURE}}"),
        Case(
            yaml: forEach("{{a.list | raw}}"), code: .invalidTemplate, line: 7, step: "b", field: "for_each",
            message: "'| raw' only changes"),
        Case(
            yaml: forEach("{{zz.list}}"), code: .unknownStep, line: 7, step: "b", field: "for_each",
            message: "step 'zz', which does not exist"),
        Case(
            yaml: forEach("{{a.lst}}"), code: .unknownCapture, line: 7, step: "b", field: "for_each",
            message: "did you mean 'list'?"),
        Case(yaml: forEach("{{b.list}}"), code: .cycle, line: 7, step: "b", field: "for_each", message: "own capture"),
        Case(
            yaml: forEach("{{a.list", quoted: true), code: .invalidTemplate, line: 7, step: "b", field: "for_each",
            message: "without a closing"),
        Case(
            yaml: forEach("3", quoted: false), code: .invalidValue, line: 7, step: "b", field: "for_each",
            message: "must be a quoted {{STEP.CAPTURE}}"),
        Case(
            yaml: forEach("[a, b]", quoted: false), code: .invalidValue, line: 7, step: "b", field: "for_each",
            message: "got a list"),
        Case(
            yaml: forEach("{{a.list}}", quoted: false), code: .invalidValue, line: 7, step: "b", field: "for_each",
            message: "quote it"),
        // {{item}} and {{index}} only in a for_each step, never in the auth block.
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test/{{index}}\"\n", code: .invalidTemplate, line: 3,
            step: "a", field: "url", message: "step 'a' has no for_each"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    headers: { X-Path: \"{{item.path}}\" }\n",
            code: .invalidTemplate, line: 4, step: "a", field: "headers.X-Path",
            message: "{{item.path}} is the current element"),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test\"\n    body: { n: \"{{item}}\" }\n",
            code: .invalidTemplate, line: 4, step: "a", field: "body.n", message: "has no for_each"),
        Case(
            yaml:
                "auth:\n  login: { url: \"http://x.test/{{index}}\", token: $.t }\nsteps:\n  - id: a\n    url: \"http://x.test\"\n",
            code: .invalidTemplate, line: 2, step: nil, field: "auth.login.url", message: "not once per element"
        ),
        Case(
            yaml: "steps:\n  - id: a\n    url: \"http://x.test/{{item.a[x]}}\"\n", code: .invalidTemplate, line: 3,
            step: "a", field: "url", message: "not a path into the element"),
        // A capture is $.path or { header: NAME }.
        Case(
            yaml: capture("{ header: \"X Id\" }"), code: .invalidValue, line: 5, step: "a", field: "captures.v.header",
            message: "'X Id' is not a header name"),
        Case(
            yaml: capture("{ headr: ETag }"), code: .unknownField, line: 5, step: "a", field: "captures.v.headr",
            message: "did you mean 'header'?"),
        Case(
            yaml: capture("{}"), code: .missingField, line: 5, step: "a", field: "captures.v",
            message: "missing 'header'"),
        Case(
            yaml: capture("header ETag"), code: .invalidCapturePath, line: 5, step: "a", field: "captures.v",
            message: "captured with { header: NAME }"),
        Case(
            yaml: "steps:\n  - id: item\n    url: \"http://x.test\"\n", code: .invalidValue, line: 2, step: "item",
            field: "id", message: "reserved for the element"),
        Case(
            yaml: "steps:\n  - id: index\n    url: \"http://x.test\"\n", code: .invalidValue, line: 2, step: "index",
            field: "id", message: "reserved for the element"),
    ]

    /// Step `a` captures `v` as `value` (line 5).
    static func capture(_ value: String) -> String {
        "steps:\n  - id: a\n    url: \"http://x.test\"\n    captures:\n      v: \(value)\n"
    }

    /// Step `a` captures `list`; step `b` iterates over `value` (line 7).
    static func forEach(_ value: String, quoted: Bool = true) -> String {
        let written = quoted ? "\"\(value)\"" : value
        return
            "steps:\n  - id: a\n    url: \"http://x.test\"\n    captures: { list: $.list }\n  - id: b\n    url: \"http://x.test/{{item}}\"\n    for_each: \(written)\n"
    }

    @Test func forEachMakesTheStepDependOnItsListAndAllowsItemAndIndex() throws {
        let workflow = try parse(
            """
            steps:
              - { id: album, url: "http://x.test/album", captures: { images: $.images } }
              - id: image
                for_each: "{{album.images}}"
                url: "http://x.test{{item.path | raw}}?i={{index}}"
                headers: { X-Index: "{{index}}", X-First: "{{item.tags[0]}}" }
                body: { whole: "{{item}}" }
            """)
        let step = try #require(workflow.step("image"))
        #expect(step.forEach?.description == "{{album.images}}")
        #expect(step.forEachLocation?.line == 4)
        #expect(step.dependencies == ["album"])
        #expect(workflow.step("album")?.forEach == nil)
    }

    @Test(arguments: cases)
    func badInput(_ input: Case) throws {
        let found = errors(input.yaml)
        let error = try #require(found.first { $0.code == input.code }, "got \(found)")
        #expect(error.location?.line == input.line, "\(error)")
        #expect(error.step == input.step, "\(error)")
        #expect(error.field == input.field, "\(error)")
        #expect(error.description.contains(input.message), "\(error)")
        #expect(error.description.hasPrefix("flow.yaml:\(input.line):"), "\(error)")
    }

    @Test func aFileThatCannotBeReadSaysWhy() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workflow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let binary = folder.appendingPathComponent("binary.yaml")
        try Data([0xFF, 0xFE, 0x00, 0xC3]).write(to: binary)
        let empty = folder.appendingPathComponent("empty.yaml")
        try Data().write(to: empty)
        let reasons: [(URL, String)] = [
            (folder.appendingPathComponent("missing.yaml"), "no such file"),
            (folder, "is a directory, not a workflow file"),
            (binary, "is not UTF-8 text"),
            (empty, "empty file"),
            (URL(fileURLWithPath: "/dev/null"), "empty file"),
        ]
        for (url, reason) in reasons {
            let error = #expect(throws: WorkflowErrors.self) { try Workflow.load(contentsOf: url, name: "flow.yaml") }
            #expect(error?.errors.map(\.code) == [.unreadable])
            #expect(error?.description.contains("flow.yaml: error: \(reason)") == true, "\(String(describing: error))")
        }
    }

    /// A FIFO (what `<(cat flow.yaml)` gives) is read as a stream, not refused as not UTF-8.
    @Test func aPipeIsReadToItsEnd() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("workflow-fifo-\(UUID().uuidString)")
            .path
        try #require(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let text = "steps:\n  - { id: a, url: \"http://x.test/a\" }\n"
        // The writer blocks in open until the reader opens the FIFO, as a shell's `cat` does.
        Thread.detachNewThread {
            guard let handle = FileHandle(forWritingAtPath: path) else { return }
            handle.write(Data(text.utf8))
            try? handle.close()
        }
        let workflow = try Workflow.load(contentsOf: URL(fileURLWithPath: path), name: "flow.yaml")
        #expect(workflow.steps.map(\.id) == ["a"])
    }

    @Test func aCycleIsReportedWithItsPath() throws {
        let found = errors(
            """
            steps:
              - id: a
                url: "http://x.test/{{c.v}}"
                captures: { v: $.v }
              - id: b
                url: "http://x.test"
                needs: a
                captures: { v: $.v }
              - id: c
                url: "http://x.test/{{b.v}}"
                captures: { v: $.v }
            """)
        let cycle = try #require(found.first { $0.code == .cycle })
        #expect(found.count == 1, "\(found)")
        let paths = ["a → b → c → a", "b → c → a → b", "c → a → b → c"]
        #expect(paths.contains { cycle.message.contains($0) }, "\(cycle)")
    }

    @Test func everyProblemIsReportedAtOnce() {
        let found = errors(
            """
            limit: 0
            steps:
              - id: a
                urll: "http://x.test"
                url: "http://x.test"
                timeout: -1s
              - id: b
                url: "http://x.test/{{a.missing}}"
                needs: [zzz]
            """)
        #expect(
            found.map(\.code) == [.invalidValue, .unknownField, .invalidValue, .unknownCapture, .unknownStep],
            "\(found)")
        #expect(found.map { $0.location?.line } == [1, 4, 6, 8, 9])
    }
}
