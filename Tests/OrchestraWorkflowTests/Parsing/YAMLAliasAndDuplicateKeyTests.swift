import OrchestraWorkflow
import TestSupport
import Testing

/// Aliases are bounded before anything expands them, and every duplicate key is reported at
/// its own line.
@Suite("YAML aliases and duplicate keys", .timeLimit(.minutes(1)), .takesTurns)
struct YAMLAliasAndDuplicateKeyTests {
    /// `levels` anchors, each a list of ten aliases of the one before: 10^levels values in the
    /// last, in a file of a few hundred bytes. The step's body is the last.
    static func aliasBomb(levels: Int) -> String {
        var lines = ["x-anchors:", "  l0: &l0 [a, a, a, a, a, a, a, a, a, a]"]
        for level in 1..<levels {
            lines.append(
                "  l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
                    + "]")
        }
        lines += ["steps:", "  - id: a", "    method: POST", "    url: \"http://x.test\"", "    body: *l\(levels - 1)"]
        return lines.joined(separator: "\n") + "\n"
    }

    @Test(arguments: [7, 9, 30])
    func anAliasBombIsRefusedAtTheAliasThatCrossesTheBudget(levels: Int) throws {
        let text = Self.aliasBomb(levels: levels)
        #expect(text.utf8.count < 100 * levels, "a small file")
        let found = errors(text)
        let error = try #require(found.first)
        #expect(found.count == 1)
        #expect(error.code == .syntax)
        #expect(error.message.contains("aliases would repeat more than 1000000 values"), "\(error.message)")
        #expect(error.message.contains("alias bomb"))
        // Each *l4 repeats 111,111 values; after l1…l4 (123,440 repeated) the eighth *l4 of
        // l5 crosses 1,000,000: the error is on l5's line, whatever comes after.
        #expect(error.location?.line == 7, "line of the l5 anchor's list of aliases")
    }

    @Test func aliasesUnderTheBudgetExpandAsWritten() throws {
        let text = """
            vars: { who: ada }
            steps:
              - id: a
                method: POST
                url: "http://x.test"
                headers: &headers { Accept: application/json }
                body: { item: &item { name: "{{vars.who}}", n: 1 } }
              - id: b
                method: POST
                url: "http://x.test"
                headers: *headers
                body: [*item, *item, *item]

            """
        let step = try #require(try parse(text).step("b"))
        #expect(step.request.headers.map(\.name) == ["Accept"])
        guard case .json(let body)? = step.request.body else {
            Issue.record("JSON body expected")
            return
        }
        let rendered = try body.render(with: TemplateValues(variables: ["who": "ada"]))
        #expect(rendered.text == #"[{"name":"ada","n":1},{"name":"ada","n":1},{"name":"ada","n":1}]"#)
    }

    @Test func everyDuplicateKeyIsReportedAtItsOwnLine() {
        let text = """
            name: one
            steps:
              - id: a
                url: "http://x.test/1"
                url: "http://x.test/2"
                headers: { A: "1", B: "2", A: "3" }
              - id: b
                url: "http://x.test"
                id: c
            name: two

            """
        let found = errors(text)
        #expect(found.allSatisfy { $0.code == .syntax })
        #expect(found.map { $0.location?.line } == [5, 6, 9, 10])
        #expect(found[0].message.contains("'url' is given twice in one mapping (first at line 4)"))
        #expect(found[1].message.contains("'A' is given twice in one mapping (first at line 6)"))
        #expect(found[2].message.contains("'id' is given twice in one mapping (first at line 7)"))
        #expect(found[3].message.contains("'name' is given twice in one mapping (first at line 1)"))
    }

    @Test func aKeyRepeatedInDifferentMappingsIsNoDuplicate() throws {
        let workflow = try parse(
            "steps:\n  - { id: a, url: \"http://x.test\" }\n  - { id: b, url: \"http://x.test\" }\n")
        #expect(workflow.steps.map(\.id) == ["a", "b"])
    }

    @Test func anUndefinedAliasIsASyntaxErrorAtItsLine() throws {
        let found = errors("steps:\n  - id: a\n    url: *nowhere\n")
        let error = try #require(found.first)
        #expect(error.code == .syntax)
        #expect(error.message.contains("undefined alias"), "\(error.message)")
        #expect(error.location?.line == 3)
    }
}
