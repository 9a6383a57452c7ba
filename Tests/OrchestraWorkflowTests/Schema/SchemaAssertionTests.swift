import Foundation
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `- $: { schema: user.schema.json }` and inline schemas: read and checked with the workflow
/// (so `validate` reports a schema's mistakes with their place), evaluated on the response.
@Suite("assert: schema", .timeLimit(.minutes(1)), .takesTurns)
struct SchemaAssertionTests {
    /// A folder holding `files`, for a workflow whose schema paths are relative to it.
    static func folder(_ files: [String: String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-schema-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in files {
            let url = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        return folder
    }

    /// The errors of loading `flow.yaml` from `folder`.
    static func loadErrors(_ folder: URL) -> [String] {
        do {
            _ = try Workflow.load(contentsOf: folder.appendingPathComponent("flow.yaml"), name: "flow.yaml")
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    static func step(_ check: String) -> String {
        """
        steps:
          - id: user
            url: "http://x.test/users/7"
            assert:
              - \(check)
        """
    }

    /// A check of a large body quotes its start, secrets masked, with "more than" its length
    /// written so far: the whole body is not written out as text to be cut.
    @Test func aFailedCheckOfALargeBodyQuotesItsStart() async throws {
        let token = "tok-1234567890-secret"
        // The token straddles the 200th character of the quote.
        let body =
            #"[""# + String(repeating: "a", count: 190) + token + #"""#
            + String(repeating: #",{"id":1}"#, count: 50_000) + "]"
        let transport = ScriptedHTTPTransport { _, _ in respond(200, body) }
        let workflow = try parse(
            """
            vars: { token: "\(token)" }
            secrets: [token]
            steps:
              - id: big
                url: "http://x.test/big"
                assert:
                  - $: { schema: { type: object } }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let actual = try #require(report["big"]?.assertions.first?.actual)
        #expect(actual.hasPrefix(#"[""# + String(repeating: "a", count: 190)), "\(actual)")
        #expect(!actual.contains("tok-"), "\(actual)")
        #expect(actual.contains("***"), "\(actual)")
        #expect(actual.hasSuffix("characters)") && actual.contains("… (more than 65"), "\(actual)")
    }

    @Test(
        "the demo server's schema, saved as a file beside the workflow, passes /users/7 and lists what /broken-users/7 breaks"
    )
    func againstTheDemoServer() async throws {
        try await withDemoServer { server in
            let (schema, response) = try await URLSession.shared.data(
                from: server.baseURL.appendingPathComponent("schemas/user"))
            #expect(
                (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type") == "application/schema+json")
            let folder = try Self.folder([
                "schemas/user.schema.json": String(decoding: schema, as: UTF8.self),
                "flow.yaml": """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: good
                    url: "{{vars.base}}/users/7"
                    assert:
                      - $: { schema: schemas/user.schema.json }
                      - $.orders: { schema: { type: array, minItems: 2, items: { required: [id] } } }
                  - id: broken
                    url: "{{vars.base}}/broken-users/7"
                    assert:
                      - $: { schema: schemas/user.schema.json }
                      - $.orders: { schema: { type: array, maxItems: 1 } }
                """,
            ])
            let workflow = try Workflow.load(contentsOf: folder.appendingPathComponent("flow.yaml"))
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report["good"]?.state == .succeeded, "\(report["good"]?.error ?? "")")
            let broken = try #require(report["broken"])
            #expect(broken.state == .failed)
            #expect(
                broken.assertions.map(\.description) == [
                    "$ schema schemas/user.schema.json: /id: expected integer, got string; /name: expected at least 1 character (minLength), got 0; /orders/0/id: expected integer, got string; /orders/1: required property 'id' is missing; (root): property 'admin' is not allowed (additionalProperties)",
                    "$.orders schema inline schema: (root): expected at most 1 element (maxItems), got 2",
                ])
            #expect(
                broken.error?.hasPrefix("2 of 2 assertions failed: $ schema schemas/user.schema.json: /id:") == true)
        }
    }

    @Test(
        "the demo server's recursive tree schema: a small tree passes, a tree 200 deep stops at the bound with a message"
    )
    func recursiveTree() async throws {
        try await withDemoServer { server in
            let (schema, _) = try await URLSession.shared.data(
                from: server.baseURL.appendingPathComponent("schemas/tree"))
            let folder = try Self.folder([
                "tree.schema.json": String(decoding: schema, as: UTF8.self),
                "flow.yaml": """
                steps:
                  - { id: small, url: "http://x.test/small", assert: [ { $: { schema: tree.schema.json } } ] }
                  - { id: deep, url: "http://x.test/deep", assert: [ { $: { schema: tree.schema.json } } ] }
                """,
            ])
            var deep = #"{"name":"leaf"}"#
            for level in 0..<200 { deep = #"{"name":"n\#(level)","children":[\#(deep)]}"# }
            let body = deep
            let transport = ScriptedHTTPTransport { request, _ in
                request.path == "/small"
                    ? respond(200, #"{"name":"root","children":[{"name":"a"},{"name":"b","children":[{"name":"c"}]}]}"#)
                    : respond(200, body)
            }
            let workflow = try Workflow.load(contentsOf: folder.appendingPathComponent("flow.yaml"))
            let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
            #expect(report["small"]?.state == .succeeded, "\(report["small"]?.error ?? "")")
            let reason = try #require(report["deep"]?.assertions.first?.reason)
            #expect(reason.hasPrefix("/children/0/children/0/"), "\(reason)")
            #expect(
                reason.hasSuffix(
                    "the schema applies more than 128 schemas inside each other here (a $ref that refers to itself without end?)"
                ))
        }
    }

    @Test("schema: \"{{spec.schema}}\" checks against the schema an earlier step captured from the demo server")
    func capturedSchema() async throws {
        try await withDemoServer { server in
            let workflow = try Workflow.parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - id: spec
                    url: "{{vars.base}}/schemas/user"
                    captures: { schema: $, title: $.title }
                  - id: good
                    url: "{{vars.base}}/users/7"
                    assert: [ { $: { schema: "{{spec.schema}}" } } ]
                  - id: broken
                    url: "{{vars.base}}/broken-users/7"
                    assert: [ { $.orders: { schema: "{{spec.schema}}" } }, { $: { schema: "{{spec.title}}" } } ]
                """, file: "flow.yaml", environment: [:])
            #expect(workflow.step("good")?.dependencies == ["spec"])
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report["good"]?.state == .succeeded, "\(report["good"]?.error ?? "")")
            let checks = try #require(report["broken"]?.assertions)
            #expect(checks.map(\.expected) == ["{{spec.schema}}", "{{spec.title}}"])
            #expect(checks.first?.failures == ["(root): expected object, got array"])
            #expect(
                checks.last?.reason?.hasPrefix("{{spec.title}} is not a JSON Schema: ") == true, "\(checks.last as Any)"
            )
        }
    }

    @Test("a body that is not JSON, or a path that is not there, fails the check saying so")
    func notJSON() async throws {
        let workflow = try Workflow.parse(
            Self.step("$.user: { schema: { type: object } }"), file: "flow.yaml", environment: [:])
        let transport = ScriptedHTTPTransport { _, _ in respond(200, "not json") }
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        #expect(
            report["user"]?.assertions.first?.description
                == "$.user schema inline schema: the response is not JSON: not json")
    }

    @Test("until: polls until the response matches its schema, each attempt naming what did not")
    func poll() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            return call < 3
                ? respond(200, #"{"status":"running"}"#) : respond(200, #"{"status":"done","result":"r"}"#)
        }
        let workflow = try Workflow.parse(
            """
            steps:
              - id: job
                url: "http://x.test/jobs/1"
                until: { interval: 1s, max_attempts: 5 }
                assert:
                  - $: { schema: { required: [status, result], properties: { status: { const: done } } } }
            """, file: "flow.yaml", environment: [:])
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            for attempt in 1...2 {
                try await waitUntil("poll asleep after attempt \(attempt)") {
                    transport.requests.count == attempt
                        && clock.pendingSleepers.contains(clock.now.advanced(by: .seconds(1)))
                }
                clock.advance(by: .seconds(1))
            }
            let report = await run
            let job = try #require(report["job"])
            #expect(job.state == .succeeded, "\(job.error ?? "")")
            #expect(job.polls.map(\.passed) == [false, false, true])
            #expect(
                job.polls.first?.failure?.contains(#"/status: expected "done" (const), got "running""#) == true,
                "\(job.polls)")
        }
    }

    @Test("a secret in the response is masked in the failures, in the value and in the pointer")
    func secrets() async throws {
        let workflow = try Workflow.parse(
            """
            vars: { pass: "hunter2" }
            secrets: [pass]
            steps:
              - id: user
                url: "http://x.test/u"
                assert:
                  - $: { schema: { additionalProperties: { const: 1 }, required: [id] } }
            """, file: "flow.yaml", environment: [:])
        let transport = ScriptedHTTPTransport { _, _ in respond(200, #"{"hunter2":2,"name":"hunter2"}"#) }
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        let check = try #require(report["user"]?.assertions.first)
        #expect(
            check.failures == [
                "/***: expected 1 (const), got 2", #"/name: expected 1 (const), got "***""#,
                "(root): required property 'id' is missing",
            ])
        let everything = "\(check) \(check.actual ?? "") \(report["user"]?.error ?? "")"
        #expect(!everything.contains("hunter2"), "\(everything)")
    }

    @Test("the report's redaction masks a schema check's failures too")
    func reportRedaction() {
        var report = StepReport(id: "a", state: .failed, method: "GET", url: "http://x.test/")
        var check = AssertionResult(
            subject: "$", operatorName: "schema", expected: "inline schema", actual: nil, passed: false)
        check.failures = [#"/token: expected integer, got "hunter2""#]
        report.assertions = [check]
        let redacted = Redactor(secrets: ["hunter2"]).redact(report)
        #expect(redacted.assertions.first?.failures == [#"/token: expected integer, got "***""#])
    }

    @Test(
        "validate reports a schema's mistakes with the file, line and column",
        arguments: [
            (
                "$: { schema: { type: object, properties: { id: { type: integr } } } }",
                #"flow.yaml:5:64: error: step 'user', field 'assert[0].$.schema': schema: /properties/id/type: unknown type 'integr'; did you mean 'integer'?"#
            ),
            (
                "$: { schema: { required: id } }",
                #"flow.yaml:5:34: error: step 'user', field 'assert[0].$.schema': schema: /required: must be a list of property names, got "id""#
            ),
            (
                "$: { schema: { minLength: \"{{vars.n}}\" } }",
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': a schema is read as written: it holds no templates ({{…}})"
            ),
            (
                "body: { schema: { type: string } }",
                "flow.yaml:5:25: error: step 'user', field 'assert[0].body.schema': a schema checks the JSON body: write it on $ or a $.path, as in $: { schema: user.schema.json }"
            ),
            (
                "$: { schema: \"{{vars.base}}\" }",
                #"flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': a schema from a response is exactly one capture, as in "{{spec.user}}", got '{{vars.base}}'"#
            ),
            (
                "$: { schema: missing.json }",
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': no such file 'missing.json'"
            ),
            (
                "$: { schema: bad.json }",
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': schema file 'bad.json', line 4, column 24: /properties/id/minimum: must be a number, got \"1\""
            ),
            (
                "$: { schema: bad.yaml }",
                "bad.yaml:3:15: error: step 'user', field 'assert[0].$.schema': schema: /properties/id/type: unknown type 'integr'; did you mean 'integer'?"
            ),
            (
                "$: { schema: broken.json }",
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': schema file 'broken.json': is not JSON: line 2, column 1: "
            ),
            (
                "$: { schema: remote.json }",
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': schema file 'remote.json', line 1, column 10: /$ref: 'https://example.com/user.json' is not supported"
            ),
        ])
    func validateMessages(_ check: String, _ message: String) throws {
        let folder = try Self.folder([
            "flow.yaml": Self.step(check),
            "bad.json": """
            {
              "type": "object",
              "properties": {
                "id": { "minimum": "1" }
              }
            }
            """,
            "broken.json": "{\n",
            "bad.yaml": "type: object\nproperties:\n  id: { type: integr }\n",
            "remote.json": #"{"$ref": "https://example.com/user.json"}"#,
        ])
        let errors = Self.loadErrors(folder)
        // (A template in a schema is also checked as one: `vars.n` is unknown here too.)
        #expect(errors.first?.hasPrefix(message) == true, "\(errors)")
        #expect(errors.count == (message.contains("templates") || message.contains("vars.base") ? 2 : 1), "\(errors)")
    }

    @Test("a schema file larger than 1 MiB is refused, naming the limit")
    func largeFile() throws {
        let folder = try Self.folder([
            "flow.yaml": Self.step("$: { schema: big.json }"),
            "big.json": "[" + String(repeating: " ", count: JSONSchema.maximumFileSize) + "]",
        ])
        let errors = Self.loadErrors(folder)
        #expect(
            errors == [
                "flow.yaml:5:22: error: step 'user', field 'assert[0].$.schema': schema file 'big.json': is larger than 1 MB (the limit for a schema file)"
            ])
    }

    @Test("an included file's schema path is relative to the included file")
    func included() throws {
        let folder = try Self.folder([
            "flow.yaml": "include: [parts/user.yaml]\nsteps:\n  - { id: other, url: \"http://x.test/\" }\n",
            "parts/user.yaml": Self.step("$: { schema: user.schema.json }"),
            "parts/user.schema.json": #"{"type": "object"}"#,
        ])
        let workflow = try Workflow.load(contentsOf: folder.appendingPathComponent("flow.yaml"))
        let step = try #require(workflow.steps.first { $0.assertions.count == 1 })
        guard case .schema(let schema) = step.assertions.first?.checks.first else {
            Issue.record("no schema check: \(step.assertions)")
            return
        }
        #expect(schema.name == "user.schema.json" && schema.root == .object([.init("type", .string("object"))]))
    }

    @Test("boolean and inline schemas, JSON and YAML files, paths relative to the workflow's folder")
    func forms() throws {
        let folder = try Self.folder([
            "flow.yaml": Self.step("$: { schema: true, type: object }")
                + "\n      - $.id: { schema: schemas/id.json }\n      - $.id: { schema: schemas/id.yaml }\n",
            "schemas/id.json": #"{"type": "integer"}"#,
            "schemas/id.yaml": "type: integer  # YAML, read as an inline schema is\nminimum: 1\n",
        ])
        let workflow = try Workflow.load(contentsOf: folder.appendingPathComponent("flow.yaml"))
        let assertions = try #require(workflow.step("user")?.assertions)
        let checks = assertions.flatMap(\.checks)
        #expect(checks.map(\.operatorName) == ["schema", "type", "schema", "schema"])
        guard case .schema(let schema) = checks[2], case .schema(let yaml) = checks[3] else { return }
        #expect(schema.name == "schemas/id.json")
        #expect(yaml.name == "schemas/id.yaml" && yaml.root.text == #"{"type":"integer","minimum":1}"#)
    }
}
