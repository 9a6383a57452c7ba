import Foundation
import OrchestraWorkflow
import Testing

@Suite("Templates and capture paths")
struct TemplateTests {
    let values = TemplateValues(
        variables: ["base": "http://127.0.0.1:8080", "q": "a b&c=d/é"],
        captures: ["login": ["token": .string("x/y z"), "id": .integer(42), "path": .string("/images/3"),
                             "quote": .string("say \"hi\"\n"), "user": .object(["id": .integer(1)])]]
    )

    @Test func urlValuesArePercentEncodedAsAComponent() throws {
        let template = try Template(parsing: "{{vars.base}}/search?q={{vars.q}}&t={{ login.token }}&id={{login.id}}")
        #expect(try template.render(for: .url, with: values) == "http://127.0.0.1:8080/search?q=a%20b%26c%3Dd%2F%C3%A9&t=x%2Fy%20z&id=42")
    }

    @Test func rawInsertsAsIsAndALeadingReferenceIsABase() throws {
        let template = try Template(parsing: "{{vars.base}}{{login.path | raw}}?x={{login.path}}")
        #expect(try template.render(for: .url, with: values) == "http://127.0.0.1:8080/images/3?x=%2Fimages%2F3")
    }

    @Test func textIsInsertedAsIs() throws {
        let template = try Template(parsing: "Bearer {{login.token}} #{{login.id}} {{login.user}}")
        #expect(try template.render(for: .text, with: values) == #"Bearer x/y z #42 {"id":1}"#)
    }

    @Test func jsonBodiesEscapeTextAndKeepSoleValuesTyped() throws {
        let body = JSONTemplate.object([
            (key: "id", value: .string(try Template(parsing: "{{login.id}}"))),
            (key: "user", value: .string(try Template(parsing: "{{ login.user }}"))),
            (key: "note", value: .string(try Template(parsing: "{{login.quote}} ({{login.id}})"))),
            (key: "list", value: .array([.integer(1), .string(try Template(parsing: "{{vars.q}}"))])),
        ])
        #expect(try body.render(with: values).text == #"{"id":42,"user":{"id":1},"note":"say \"hi\"\n (42)","list":[1,"a b&c=d/é"]}"#)
    }

    @Test func referencesAndTheirErrors() throws {
        #expect(try Template(parsing: "{{a.b}}/{{vars.c}}").references.map(\.description) == ["{{a.b}}", "{{vars.c}}"])
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{a.b") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{a.b.c}}") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{a.b | upper}}") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{}}") }
    }

    @Test func capturePaths() throws {
        let document = try JSONValue(parsing: Data(#"{"user":{"id":42,"roles":["admin","dev"],"ok":true,"ratio":0.5}}"#.utf8))
        #expect(try CapturePath(parsing: "$.user.id").evaluate(in: document) == .integer(42))
        #expect(try CapturePath(parsing: "$.user.roles[1]").evaluate(in: document) == .string("dev"))
        #expect(try CapturePath(parsing: "$.user.ok").evaluate(in: document) == .bool(true))
        #expect(try CapturePath(parsing: "$.user.ratio").evaluate(in: document) == .number(0.5))
        #expect(try CapturePath(parsing: "$").evaluate(in: document) == document)
        #expect(try CapturePath(parsing: "$.user.roles[2]").evaluate(in: document) == nil)
        #expect(try CapturePath(parsing: "$.nobody.id").evaluate(in: document) == nil)
        #expect(try CapturePath(parsing: "$[0]").evaluate(in: .array([.null])) == .null)
        for bad in ["user.id", "$.", "$.a[", "$.a[-1]", "$.a[b]", "$x"] {
            #expect(throws: CapturePathError.self, "\(bad)") { try CapturePath(parsing: bad) }
        }
    }
}
