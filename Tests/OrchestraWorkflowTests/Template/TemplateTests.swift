import Foundation
@_spi(Simulation) import Orchestra
import OrchestraWorkflow
import TestSupport
import Testing

@Suite("Templates and capture paths", .timeLimit(.minutes(1)), .takesTurns)
struct TemplateTests {
    let values = TemplateValues(
        variables: ["base": "http://127.0.0.1:8080", "q": "a b&c=d/é"],
        captures: [
            "login": [
                "token": .string("x/y z"), "id": .integer(42), "path": .string("/images/3"),
                "quote": .string("say \"hi\"\n"), "user": .object(["id": .integer(1)]),
            ]
        ]
    )

    @Test func urlValuesArePercentEncodedAsAComponent() throws {
        let template = try Template(parsing: "{{vars.base}}/search?q={{vars.q}}&t={{ login.token }}&id={{login.id}}")
        #expect(
            try template.render(for: .url, with: values)
                == "http://127.0.0.1:8080/search?q=a%20b%26c%3Dd%2F%C3%A9&t=x%2Fy%20z&id=42")
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
        #expect(
            try body.render(with: values).text
                == #"{"id":42,"user":{"id":1},"note":"say \"hi\"\n (42)","list":[1,"a b&c=d/é"]}"#)
    }

    @Test func referencesAndTheirErrors() throws {
        #expect(try Template(parsing: "{{a.b}}/{{vars.c}}").references.map(\.description) == ["{{a.b}}", "{{vars.c}}"])
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{a.b") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{a.b.c}}") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{a.b | upper}}") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{}}") }
    }

    /// The element `{"path":"/images/2","name":"a b","tags":["x/y"],"n":7}` at index 2.
    var elementValues: TemplateValues {
        var values = values
        values.item = .object([
            "path": .string("/images/2"), "name": .string("a b"), "tags": .array([.string("x/y")]), "n": .integer(7),
        ])
        values.index = 2
        return values
    }

    @Test func itemAndIndexInAURLAreEncodedUnlessRawOrFirst() throws {
        let template = try Template(
            parsing: "{{vars.base}}{{item.path | raw}}?n={{item.name}}&t={{item.tags[0]}}&i={{index}}&p={{item.path}}")
        #expect(
            try template.render(for: .url, with: elementValues)
                == "http://127.0.0.1:8080/images/2?n=a%20b&t=x%2Fy&i=2&p=%2Fimages%2F2")
        let whole = try Template(parsing: "http://x.test/{{item.n}}/{{item}}")
        #expect(
            try whole.render(for: .url, with: elementValues).hasPrefix(
                "http://x.test/7/%7B%22path%22%3A%22%2Fimages%2F2%22"))
        let leading = try Template(parsing: "{{item.path}}/x")
        #expect(try leading.render(for: .url, with: elementValues) == "/images/2/x")
    }

    @Test func substitutingVariablesLeavesTheOtherReferences() throws {
        let template = try Template(
            parsing: "{{vars.base}}{{ item.path | raw }}?q={{vars.q}}&i={{index}}&t={{login.token}}")
        #expect(
            template.substitutingVariables(values.variables, for: .url)
                == "http://127.0.0.1:8080{{item.path | raw}}?q=a%20b%26c%3Dd%2F%C3%A9&i={{index}}&t={{login.token}}")
    }

    @Test func itemAndIndexInHeadersAndJSONBodies() throws {
        #expect(
            try Template(parsing: "#{{index}} {{item.name}} {{item.tags}}").render(for: .text, with: elementValues)
                == #"#2 a b ["x/y"]"#)
        let body = JSONTemplate.object([
            (key: "index", value: .string(try Template(parsing: "{{index}}"))),
            (key: "n", value: .string(try Template(parsing: "{{ item.n }}"))),
            (key: "tags", value: .string(try Template(parsing: "{{item.tags}}"))),
            (key: "note", value: .string(try Template(parsing: "{{index}}: {{item.name}}"))),
        ])
        #expect(try body.render(with: elementValues).text == #"{"index":2,"n":7,"tags":["x/y"],"note":"2: a b"}"#)
        let item = try #require(try Template(parsing: "{{item}}").soleReference)
        #expect(try elementValues.value(of: item) == elementValues.item)
    }

    @Test func elementReferencesParseAndNeedAnElement() throws {
        let references = try Template(parsing: "{{item}}{{item.a.b[0]}}{{item[1]}}{{index | raw}}").references
        #expect(references.map(\.description) == ["{{item}}", "{{item.a.b[0]}}", "{{item[1]}}", "{{index | raw}}"])
        #expect(references.allSatisfy { $0.isElement && !$0.isCapture && !$0.isVariable })
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{item.}}") }
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "{{index.x}}") }
        #expect(throws: TemplateValues.Missing.self) {
            try Template(parsing: "{{item.path}}").render(for: .text, with: values)
        }
        let missing = #expect(throws: TemplateValues.Missing.self) {
            try Template(parsing: "{{item.nothing}}").render(for: .text, with: elementValues)
        }
        #expect(missing?.description == "{{item.nothing}}: the element has no '.nothing'")
    }

    @Test func capturePaths() throws {
        let document = try JSONValue(
            parsing: Data(#"{"user":{"id":42,"roles":["admin","dev"],"ok":true,"ratio":0.5}}"#.utf8))
        #expect(try CapturePath(parsing: "$.user.id").evaluate(in: document) == .integer(42))
        #expect(try CapturePath(parsing: "$.user.roles[1]").evaluate(in: document) == .string("dev"))
        #expect(try CapturePath(parsing: "$.user.ok").evaluate(in: document) == .bool(true))
        #expect(try CapturePath(parsing: "$.user.ratio").evaluate(in: document) == .number(0.5))
        #expect(try CapturePath(parsing: "$").evaluate(in: document) == document)
        #expect(try CapturePath(parsing: "$.user.roles[2]").evaluate(in: document) == nil)
        #expect(try CapturePath(parsing: "$.nobody.id").evaluate(in: document) == nil)
        #expect(try CapturePath(parsing: "$[0]").evaluate(in: .array([.null])) == .null)
        for bad in ["user.id", "$.", "$.a[", "$.a[1.5]", "$.a[b]", "$x", "$['a.b'", "$['a'x]", "$[\"a]"] {
            #expect(throws: CapturePathError.self, "\(bad)") { try CapturePath(parsing: bad) }
        }
    }

    @Test func quotedKeysNegativeIndexesAndWildcards() throws {
        let document = try JSONValue(
            parsing: Data(
                #"{"a.b":{"it's":1},"items":[{"id":1,"tags":["x"]},{"name":"no id","tags":[]},{"id":3,"tags":["y","z"]}],"m":{"p":1,"q":2}}"#
                    .utf8))
        func value(_ path: String) throws -> JSONValue? { try CapturePath(parsing: path).evaluate(in: document) }
        #expect(try value("$['a.b']") == .object(["it's": .integer(1)]))
        #expect(try value(#"$["a.b"]['it\'s']"#) == .integer(1))
        #expect(try value("$.items[-1].id") == .integer(3))
        #expect(try value("$.items[-3].id") == .integer(1))
        #expect(try value("$.items[-4]") == nil)
        #expect(
            try value("$.items[*].id") == .array([.integer(1), .integer(3)]), "elements without the key are left out")
        #expect(try value("$.items[*].tags[*]") == .array([.string("x"), .string("y"), .string("z")]), "one flat list")
        #expect(try value("$.m.*") == .array([.integer(1), .integer(2)]))
        #expect(try value("$.items[0].id[*]") == nil, "a wildcard on a number")
        #expect(try CapturePath(parsing: "$.items[*]").hasWildcard)
    }

    /// Values that need nothing encoded skip Foundation's encoder: the result is the same as
    /// the encoder's for any value, random ones from unreserved, reserved and non-ASCII
    /// characters.
    @Test func percentEncodingAgreesWithFoundationsEncoder() {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let pieces = [
            "a", "Z", "7", "-", ".", "_", "~", "/", "?", "&", "=", "%", "%20", " ", "+", "é", "😀", ":", "@", "#",
        ]
        var generator = SplitMix64(seed: 29)
        var untouched = 0
        for _ in 0..<5_000 {
            let value = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
            let expected = value.addingPercentEncoding(withAllowedCharacters: unreserved)
            #expect(Template.percentEncoded(value) == expected, "'\(value)'")
            if expected == value { untouched += 1 }
        }
        #expect(untouched > 100, "the sample reaches the fast path")
    }
}
