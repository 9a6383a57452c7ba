import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("include:", .timeLimit(.minutes(1)), .takesTurns)
struct WorkflowIncludeTests {
    /// A folder holding `files` (paths relative to it, folders made as needed), removed by
    /// the caller.
    static func folder(_ files: [String: String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-include-\(UUID())")
        for (path, text) in files {
            let url = folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        return folder
    }

    /// Loads `flow.yaml` of a folder of `files`, named as `orchestra validate flow.yaml` names it.
    static func load(_ files: [String: String], variables: [String: String] = [:]) throws -> Workflow {
        let folder = try folder(files)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try Workflow.load(
            contentsOf: folder.appendingPathComponent("flow.yaml"), name: "flow.yaml", variables: variables,
            environment: [:])
    }

    /// The problems of loading `flow.yaml`, one per line as `orchestra validate` prints them.
    static func problems(_ files: [String: String]) -> [String] {
        do {
            _ = try load(files)
            return []
        } catch let errors as WorkflowErrors {
            return errors.errors.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    static let login = """
        vars:
          base: http://api.test
          user: ada
        steps:
          - id: login
            method: POST
            url: "{{vars.base}}/login"
            body: { user: "{{vars.user}}" }
            captures: { token: $.token }
          - id: me
            url: "{{vars.base}}/me"
            headers: { Authorization: "Bearer {{login.token}}" }
            needs: [login]
        """

    /// Runs `workflow` against a server that answers every request with `{"token":"t"}`;
    /// returns each request's URL and body in the order sent.
    static func run(_ workflow: Workflow) async throws -> (WorkflowReport, [(url: String, body: String)]) {
        let received = Locked<[(url: String, body: String)]>([])
        let transport = ScriptedHTTPTransport { request, body in
            received.withLock {
                $0.append((request.url?.absoluteString ?? "", body.map { String(decoding: $0, as: UTF8.self) } ?? ""))
            }
            return respond(200, #"{"token":"t-\#(request.path ?? "")"}"#)
        }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        return (report, received.withLock { $0 })
    }

    @Test func includedStepsRunBeforeTheFilesOwnAndItsVarsAreDefaults() async throws {
        let workflow = try Self.load(
            [
                "flow.yaml": """
                include: [auth/login.yaml]
                vars: { user: grace }
                steps:
                  - id: orders
                    url: "{{vars.base}}/orders"
                    headers: { Authorization: "Bearer {{login.token}}" }
                """,
                "auth/login.yaml": Self.login,
            ], variables: ["base": "http://other.test"])
        #expect(workflow.steps.map(\.id) == ["login", "me", "orders"])
        #expect(workflow.variables["user"] == "grace")
        #expect(workflow.variables["base"] == "http://other.test")
        #expect(workflow.step("orders")?.dependencies == ["login"])
        #expect(workflow.step("login")?.location?.file == "auth/login.yaml")
        #expect(workflow.step("orders")?.location?.file == nil)
        let (report, received) = try await Self.run(workflow)
        #expect(report.allSucceeded)
        #expect(received.first?.url == "http://other.test/login")
        #expect(received.first?.body == #"{"user":"grace"}"#)
    }

    @Test func aPrefixIncludesOneFileTwiceWithItsOwnStepsAndVariables() async throws {
        let workflow = try Self.load([
            "flow.yaml": """
            include:
              - { file: login.yaml, prefix: admin_, vars: { user: root } }
              - { file: login.yaml, prefix: guest_ }
            steps:
              - id: audit
                url: "{{vars.admin_base}}/audit"
                headers: { X-Admin: "{{admin_login.token}}", X-Guest: "{{guest_login.token}}" }
            """,
            "login.yaml": Self.login,
        ])
        #expect(
            workflow.steps.map(\.id) == ["admin_login", "admin_me", "guest_login", "guest_me", "audit"])
        #expect(workflow.step("admin_me")?.needs == ["admin_login"])
        #expect(workflow.step("admin_me")?.dependencies == ["admin_login"])
        #expect(workflow.variables["admin_user"] == "root")
        #expect(workflow.variables["guest_user"] == "ada")
        // `base` is declared by the file too: each copy has its own.
        #expect(workflow.variables["admin_base"] == "http://api.test")
        let (report, received) = try await Self.run(workflow)
        #expect(report.allSucceeded)
        let bodies = received.filter { $0.url.hasSuffix("/login") }.map(\.body).sorted()
        #expect(bodies == [#"{"user":"ada"}"#, #"{"user":"root"}"#])
    }

    @Test func aPrefixedCopyTakesTheIncludersValueOfItsVariable() throws {
        let workflow = try Self.load(
            [
                "flow.yaml": "include: [{ file: login.yaml, prefix: a_ }, { file: login.yaml, prefix: b_ }]",
                "login.yaml": Self.login,
            ], variables: ["base": "http://other.test", "b_base": "http://b.test"])
        #expect(workflow.variables["a_base"] == "http://other.test")
        #expect(workflow.variables["b_base"] == "http://b.test")
        #expect(workflow.variables["a_user"] == "ada")
        // `--var base` reaches the copies: it is a variable the templates use.
        #expect(workflow.usedVariables.isSuperset(of: ["base", "a_base", "b_base", "a_user"]))
        #expect(!workflow.usedVariables.contains("user"))
    }

    @Test func theGraphDrawsEachCopyOfAnIncludedFileInABox() throws {
        let workflow = try Self.load([
            "flow.yaml": """
            include: [login.yaml, { file: login.yaml, prefix: b_ }]
            steps: [{ id: orders, url: "{{vars.base}}/o", needs: [me, b_me] }]
            """,
            "login.yaml": Self.login,
        ])
        #expect(workflow.includedFiles.map(\.name) == ["login.yaml", "login.yaml as b_"])
        let dot = workflow.graph(format: .dot)
        #expect(
            dot.contains(
                "  subgraph \"cluster_0\" {\n    label=\"login.yaml\"; style=dashed;\n    \"login\";\n    \"me\";\n  }\n"
            ), "\(dot)")
        #expect(
            dot.contains("label=\"login.yaml as b_\"; style=dashed;\n    \"b_login\";\n    \"b_me\";\n  }"), "\(dot)")
        let mermaid = workflow.graph(format: .mermaid)
        #expect(mermaid.contains("  subgraph g0 [\"login.yaml\"]\n    n0\n    n1\n  end\n"), "\(mermaid)")
        #expect(mermaid.contains("  subgraph g1 [\"login.yaml as b_\"]\n    n2\n    n3\n  end\n"), "\(mermaid)")
    }

    @Test(arguments: [
        ("{{login.token}}", "{{p_login.token}}"),
        ("Bearer {{ login.token | base64 }}x", "Bearer {{p_login.token | base64}}x"),
        ("{{vars.base}}/u/{{vars.user}}?t={{env.T}}", "{{vars.base}}/u/{{vars.p_user}}?t={{env.T}}"),
        ("{{vars.base}}{{item.path | raw}}/{{index}}", "{{vars.base}}{{item.path | raw}}/{{index}}"),
        ("{{cookies.sid}} {{data.email}} {{page.cursor}}", "{{cookies.sid}} {{data.email}} {{page.cursor}}"),
        ("{{a.b | json}} == 'x'", "{{p_a.b | json}} == 'x'"),
        ("no template", "no template"),
        ("{{broken", "{{broken"),
    ])
    func aPrefixRenamesStepsAndDeclaredVariablesOnly(text: String, renamed: String) throws {
        let inclusion = WorkflowInclusion(prefix: "p_")
        let result = inclusion.renamingReferences(in: text, declared: ["user"])
        #expect(result == renamed)
        // What it renames reads back as the same template, prefixed.
        if let before = try? Template(parsing: text), let after = try? Template(parsing: result) {
            #expect(before.references.count == after.references.count)
            #expect(
                zip(before.references, after.references).allSatisfy { $0.filters == $1.filters && $0.isRaw == $1.isRaw }
            )
        }
    }

    @Test func aSecretOfAnIncludedFileIsMaskedInTheMessages() {
        let problems = Self.problems([
            "flow.yaml": "include: [login.yaml]\nsteps: [{ id: a, url: \"http://api.test/{{vars.pw}} x\" }]",
            "login.yaml": """
            vars: { pw: hunter2-secret }
            secrets: [pw]
            steps: [{ id: login, url: "http://{{vars.pw}}:99999/" }]
            """,
        ])
        #expect(problems.count == 2, "\(problems)")
        #expect(problems.allSatisfy { !$0.contains("hunter2") }, "\(problems)")
        #expect(problems.allSatisfy { $0.contains("***") }, "\(problems)")
    }

    @Test func aFolderOrABinaryFileIsNotIncluded() throws {
        let folder = try Self.folder(["flow.yaml": "include: [sub, bin.yaml]", "sub/x.yaml": "steps: []"])
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([0xFF, 0xFE, 0x00, 0x80]).write(to: folder.appendingPathComponent("bin.yaml"))
        do {
            _ = try Workflow.load(contentsOf: folder.appendingPathComponent("flow.yaml"), name: "flow.yaml")
            Issue.record("loaded")
        } catch {
            let lines = error.errors.map(\.description)
            #expect(lines.count == 2, "\(lines)")
            #expect(
                lines.first?.hasPrefix("flow.yaml:1:11: error: field 'include': cannot include sub: ") == true,
                "\(lines)")
            #expect(lines.last?.contains("cannot include bin.yaml: is not UTF-8 text") == true, "\(lines)")
        }
    }

    @Test func aPrefixReachesTheFilesAnIncludedFileIncludes() throws {
        let workflow = try Self.load([
            "flow.yaml": "include: [{ file: mid.yaml, prefix: x_, vars: { user: root } }]",
            "mid.yaml": """
            include: [login.yaml]
            vars: { user: mid }
            steps: [{ id: mid, url: "{{vars.base}}/mid", headers: { A: "{{login.token}}" }, needs: [me] }]
            """,
            "login.yaml": Self.login,
        ])
        #expect(workflow.steps.map(\.id) == ["x_login", "x_me", "x_mid"])
        #expect(workflow.step("x_mid")?.dependencies == ["x_me", "x_login"])
        #expect(workflow.variables["x_user"] == "root")
        // login.yaml declares base and mid.yaml uses it: with the prefix both say x_base.
        #expect(workflow.variables["x_base"] == "http://api.test")
        #expect(workflow.step("x_mid")?.request.url.source == "{{vars.x_base}}/mid")
        #expect(workflow.includedFiles.map(\.name) == ["login.yaml as x_", "mid.yaml as x_"])
    }

    @Test func theLookAheadForDeclaredVariablesKeepsToItsBudget() throws {
        let folder = try Self.folder([
            "b.yaml": "include: [c.yaml]\nvars: { b1: x }",
            "c.yaml": "include: [{ file: d.yaml, prefix: d_ }]\nvars: { c1: x }",
            "d.yaml": "vars: { d1: x }",
        ])
        defer { try? FileManager.default.removeItem(at: folder) }
        guard case .document(let root?) = YAMLComposer.compose("include: [b.yaml]\nvars: { a1: x }") else {
            Issue.record("no document")
            return
        }
        var budget = (files: 100, bytes: 10_000)
        #expect(
            WorkflowInclusion.declaredVariables(includedBy: root, directory: folder, budget: &budget) == ["b1", "c1"])
        #expect(budget.files == 98)
        budget = (files: 1, bytes: 10_000)
        #expect(WorkflowInclusion.declaredVariables(includedBy: root, directory: folder, budget: &budget) == ["b1"])
        budget = (files: 100, bytes: 10)
        #expect(WorkflowInclusion.declaredVariables(includedBy: root, directory: folder, budget: &budget).isEmpty)
    }

    @Test func anIncludedFileMayBringOnlyAnAuthBlock() throws {
        let workflow = try Self.load([
            "flow.yaml": """
            include: [auth.yaml]
            steps: [{ id: me, url: "{{vars.base}}/me" }]
            """,
            "auth.yaml": """
            vars: { base: "http://api.test", password: hunter2-pw }
            secrets: [password]
            auth:
              login: { url: "{{vars.base}}/token", body: { password: "{{vars.password}}" }, token: $.token }
            """,
        ])
        #expect(workflow.steps.map(\.id) == ["me"])
        #expect(workflow.auth?.location?.file == "auth.yaml")
        #expect(workflow.secretValues == ["hunter2-pw"])
        #expect(workflow.includedFiles.isEmpty || workflow.includedFiles.allSatisfy(\.steps.isEmpty))
    }

    @Test func theEntrysVarsGiveWayToTheCommandLine() throws {
        let workflow = try Self.load(
            [
                "flow.yaml": "include: [{ file: login.yaml, prefix: a_, vars: { user: root } }]",
                "login.yaml": Self.login,
            ], variables: ["a_user": "eve"])
        #expect(workflow.variables["a_user"] == "eve")
    }

    @Test func aFileIncludedByTwoOthersIsReadOnce() throws {
        let workflow = try Self.load([
            "flow.yaml": "include: [b.yaml, c.yaml]",
            "b.yaml": "include: [login.yaml]\nsteps: [{ id: b, url: \"{{vars.base}}/b\", needs: [login] }]",
            "c.yaml": "include: [login.yaml]\nsteps: [{ id: c, url: \"{{vars.base}}/c\", needs: [login] }]",
            "login.yaml": Self.login,
        ])
        #expect(workflow.steps.map(\.id) == ["login", "me", "b", "c"])
    }

    @Test func pathsInAnIncludedFileAreRelativeToIt() async throws {
        let workflow = try Self.load([
            "flow.yaml": "include: [sub/upload.yaml]",
            "sub/upload.yaml": """
            steps:
              - { id: upload, method: PUT, url: "http://api.test/up", body_file: data/note.txt }
            """,
            "sub/data/note.txt": "from the included folder",
        ])
        guard case .file(let file)? = workflow.step("upload")?.request.body else {
            Issue.record("no body_file")
            return
        }
        #expect(file.url.path.hasSuffix("/sub/data/note.txt"))
    }

    @Test func eachProblemNamesItsOwnFileLineAndColumn() {
        let problems = Self.problems([
            "flow.yaml": """
            include: [login.yaml]
            steps:
              - id: orders
                url: "{{vars.base}}/orders/{{login.tokn}}"
            """,
            "login.yaml": """
            steps:
              - id: login
                url: "{{vars.bse}}/login"
                captures: { token: $.token }
                colour: red
            """,
        ])
        #expect(problems.count == 4, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("login.yaml:3:10:") && $0.contains("'bse'") })
        #expect(problems.contains { $0.hasPrefix("login.yaml:5:5:") && $0.contains("colour") })
        #expect(problems.contains { $0.hasPrefix("flow.yaml:4:10:") && $0.contains("tokn") })
        #expect(problems.first?.hasPrefix("flow.yaml") == true)
    }

    @Test func aDuplicateStepIdNamesBothFiles() {
        let problems = Self.problems([
            "flow.yaml": "include: [login.yaml]\nsteps: [{ id: me, url: \"http://api.test/me\" }]",
            "login.yaml": Self.login,
        ])
        #expect(problems.count == 1, "\(problems)")
        #expect(
            problems.first?.hasPrefix(
                "flow.yaml:2:9: error: step 'me', field 'id': duplicate step id 'me' (first in login.yaml at line 10)")
                == true, "\(problems)")
        #expect(problems.first?.contains("login.yaml") == true, "\(problems)")
    }

    @Test func aCycleOfIncludesIsAnErrorWithTheChain() {
        let problems = Self.problems([
            "flow.yaml": "include: [b.yaml]\nsteps: [{ id: a, url: \"http://api.test/a\" }]",
            "b.yaml": "include: [c.yaml]\nsteps: [{ id: b, url: \"http://api.test/b\" }]",
            "c.yaml": "include: [flow.yaml]\nsteps: [{ id: c, url: \"http://api.test/c\" }]",
        ])
        #expect(
            problems == [
                "c.yaml:1:11: error: field 'include': the files include each other in a cycle: flow.yaml → b.yaml → c.yaml → flow.yaml"
            ])
    }

    @Test func aMissingFileIsAnErrorWithTheChain() {
        let problems = Self.problems([
            "flow.yaml": "include: [b.yaml]\nsteps: [{ id: a, url: \"http://api.test/a\" }]",
            "b.yaml": "include:\n  - nowhere.yaml\nsteps: [{ id: b, url: \"http://api.test/b\" }]",
        ])
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.hasPrefix("b.yaml:2:5: error: field 'include': cannot include nowhere.yaml: ") == true)
        #expect(problems.first?.hasSuffix("(flow.yaml → b.yaml → nowhere.yaml)") == true, "\(problems)")
    }

    @Test func includesNestedTooDeepAreRefused() {
        // 40 files in a chain: the 17th level is refused, with the chain.
        var files = ["flow.yaml": "include: [f1.yaml]\nsteps: [{ id: s0, url: \"http://api.test/\" }]"]
        for level in 1...40 {
            files["f\(level).yaml"] =
                "include: [f\(level + 1).yaml]\nsteps: [{ id: s\(level), url: \"http://api.test/\" }]"
        }
        let problems = Self.problems(files)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains("nested more than 16 files deep") == true, "\(problems)")
        #expect(problems.first?.hasPrefix("f15.yaml:1:11:") == true, "\(problems)")
    }

    @Test func aWorkflowIncludesAtMostSoManyFiles() {
        // 2,000 files, 8 times the bound.
        let count = 2_000
        var files = ["flow.yaml": "include: [" + (1...count).map { "f\($0).yaml" }.joined(separator: ", ") + "]"]
        for index in 1...count { files["f\(index).yaml"] = "steps: [{ id: s\(index), url: \"http://api.test/\" }]" }
        let problems = Self.problems(files)
        #expect(problems.count == count - WorkflowInclusion.maximumFiles, "\(problems.prefix(3))")
        #expect(problems.first?.contains("at most 256 files") == true, "\(problems.prefix(1))")
    }

    @Test func twoAuthBlocksAreAnErrorAndSecretsAddUp() throws {
        let auth = """
            vars: { password: hunter2 }
            secrets: [password]
            auth:
              login:
                method: POST
                url: "http://api.test/token"
                body: { password: "{{vars.password}}" }
                token: $.token
            steps: [{ id: %@, url: "http://api.test/%@" }]
            """
        let problems = Self.problems([
            "flow.yaml": "include: [a.yaml, b.yaml]",
            "a.yaml": auth.replacingOccurrences(of: "%@", with: "a"),
            "b.yaml": auth.replacingOccurrences(of: "%@", with: "b"),
        ])
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains("auth: is given in a.yaml (line 4) and in b.yaml (line 4)") == true)
        let workflow = try Self.load([
            "flow.yaml": "include: [a.yaml]\nvars: { key: k-123 }\nsecrets: [key]",
            "a.yaml": auth.replacingOccurrences(of: "%@", with: "a"),
        ])
        #expect(Set(workflow.secretValues) == ["hunter2", "k-123"])
        #expect(workflow.auth != nil)
    }

    @Test func twoDifferentDefaultsOfOneVariableAreAnErrorUnlessTheFileSetsIt() throws {
        let files = [
            "flow.yaml": "include: [a.yaml, b.yaml]",
            "a.yaml": "vars: { base: http://a.test }\nsteps: [{ id: a, url: \"{{vars.base}}/\" }]",
            "b.yaml": "vars: { base: http://b.test }\nsteps: [{ id: b, url: \"{{vars.base}}/\" }]",
        ]
        let problems = Self.problems(files)
        #expect(problems.count == 1, "\(problems)")
        #expect(
            problems.first?.contains("'base' has the default 'http://b.test' in b.yaml and 'http://a.test' in a.yaml")
                == true)
        let workflow = try Self.load(
            files.merging(["flow.yaml": "include: [a.yaml, b.yaml]\nvars: { base: http://c.test }"]) { $1 })
        #expect(workflow.variables["base"] == "http://c.test")
    }

    @Test func theDigestCoversTheIncludedFiles() throws {
        let one = try Self.load(["flow.yaml": "include: [login.yaml]", "login.yaml": Self.login])
        let two = try Self.load([
            "flow.yaml": "include: [login.yaml]", "login.yaml": Self.login.replacingOccurrences(of: "ada", with: "bob"),
        ])
        #expect(one.digest != two.digest)
        #expect(one.digest == (try Self.load(["flow.yaml": "include: [login.yaml]", "login.yaml": Self.login])).digest)
    }

    @Test(arguments: [
        ("include: login.yaml", "login.yaml"),  // a single path is a list of one
        ("include: [{ prefix: a_ }]", "missing 'file'"),
        ("include: [{ file: login.yaml, prefix: 'a b' }]", "the prefix 'a b' must be"),
        ("include: [{ file: login.yaml, vars: { user: x } }]", "vars: of an include needs a prefix"),
        ("include: [\"{{vars.f}}\"]", "without templates"),
        ("include: [{ file: login.yaml, as: x }]", "unknown field 'as'"),
    ])
    func badEntries(entry: String, expected: String) {
        let problems = Self.problems(["flow.yaml": entry, "login.yaml": Self.login])
        if expected == "login.yaml" {
            #expect(problems.isEmpty, "\(problems)")
        } else {
            #expect(problems.count == 1 && problems[0].contains(expected), "\(problems)")
        }
    }
}
