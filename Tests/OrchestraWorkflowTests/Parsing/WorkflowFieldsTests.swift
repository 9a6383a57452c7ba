import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("Step fields table", .timeLimit(.minutes(1)), .takesTurns)
struct WorkflowFieldsTests {
    /// A step `b` that uses `{{a.x}}` in one field, and nothing else that names `a`.
    static let uses: [(field: String, yaml: String)] = [
        ("url", #"url: "http://x.test/{{a.x}}""#),
        ("headers", "url: \"http://x.test/\"\n    headers: { X-Id: \"{{a.x}}\" }"),
        ("text body", "url: \"http://x.test/\"\n    body: \"id={{a.x}}\""),
        ("JSON body", "url: \"http://x.test/\"\n    body: { list: [1, { id: \"{{a.x}}\" }] }"),
        ("for_each", "url: \"http://x.test/{{item}}\"\n    for_each: \"{{a.x}}\""),
        ("basic_auth", "url: \"http://x.test/\"\n    basic_auth: { user: ada, password: \"{{a.x}}\" }"),
        ("form", "url: \"http://x.test/\"\n    form: { a: \"1\", b: \"{{a.x}}\" }"),
        ("multipart", "url: \"http://x.test/\"\n    multipart: [ { name: n, value: \"{{a.x}}\" } ]"),
        ("assert", "url: \"http://x.test/\"\n    assert: [ { $.id: { one_of: [1, \"{{a.x}}\"] } } ]"),
        ("save_to", "url: \"http://x.test/\"\n    save_to: \"out/{{a.x}}.bin\""),
        ("when", "url: \"http://x.test/\"\n    when: \"{{a.x}} == 'yes'\""),
    ]

    @Test(arguments: uses)
    func aCaptureInAnyTemplateFieldMakesTheStepDependOnItsStep(use: (field: String, yaml: String)) throws {
        let text =
            "steps:\n  - id: a\n    url: \"http://x.test/a\"\n    captures: { x: $.x }\n  - id: b\n    \(use.yaml)\n"
        let workflow = try Workflow.parse(text, file: "flow.yaml")
        let step = try #require(workflow.step("b"))
        #expect(step.dependencies == ["a"], "\(use.field)")
        #expect(step.captureReferences.map(\.description) == ["{{a.x}}"], "\(use.field)")
    }

    @Test func theParserAcceptsExactlyTheTableFieldsAndNamesThemWhenOneIsUnknown() {
        let names = WorkflowStep.fields.map(\.name)
        #expect(Set(names).count == names.count, "no field twice")
        #expect(names.contains("id") && names.contains("url") && names.contains("for_each"))
        let problems = errors("steps:\n  - id: a\n    url: \"http://x.test/\"\n    querry: 1\n")
        #expect(problems.count == 1)
        let message = problems.first?.description ?? ""
        #expect(message.contains("querry"), "\(message)")
    }

    @Test func everyFieldThatHoldsTemplatesListsItsReferences() {
        // The fields whose values are templates; a new one must declare its references.
        let templateFields: Set = [
            "url", "headers", "body", "basic_auth", "for_each", "assert", "form", "multipart", "save_to", "when",
        ]
        let declared = Set(WorkflowStep.fields.filter { $0.references != nil }.map(\.name))
        #expect(declared == templateFields)
    }
}
