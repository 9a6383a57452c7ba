import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// Expected values computed independently, with Python's base64, hashlib and urllib.
@Suite("Template filters", .timeLimit(.minutes(1)), .takesTurns)
struct TemplateFilterTests {
    let values = TemplateValues(
        variables: ["credentials": "ada:s3cret é", "tildes": "~~~?", "name": "Ada"],
        captures: ["a": ["user": .object(["id": .integer(1)]), "list": .array([1, 2, 3].map(JSONValue.integer))]]
    )

    func text(_ source: String) throws -> String {
        try Template(parsing: source).render(for: .text, with: values)
    }

    @Test func eachFilterTransformsTheValue() throws {
        #expect(try text("{{vars.credentials | base64}}") == "YWRhOnMzY3JldCDDqQ==")
        #expect(try text("{{vars.tildes | base64url}}") == "fn5-Pw", "URL-safe alphabet, no padding")
        #expect(try text("{{vars.credentials | urlencode}}") == "ada%3As3cret%20%C3%A9")
        #expect(
            try Template(parsing: "http://x.test/{{vars.credentials | urlencode}}?b={{vars.credentials | base64}}")
                .render(for: .url, with: values) == "http://x.test/ada%3As3cret%20%C3%A9?b=YWRhOnMzY3JldCDDqQ%3D%3D",
            "urlencode is not encoded twice in a URL; other filters' results are encoded")
        #expect(
            try text("{{vars.credentials | sha256}}")
                == "9b0876106080e2d302205ca7054316d8053122554ba4319dc8421d87e4981f56")
        #expect(
            try text("{{a.user | sha256}}") == "037c9214eef74cc3887f3a4f085b4e17d76280dafd273b0ee160c09c4ba1cfd4",
            "JSON text of an object")
        #expect(try text("{{vars.name | json}}") == #""Ada""#)
        #expect(try text("{{a.list | length}} {{vars.credentials | length}} {{a.user | length}}") == "3 12 1")
    }

    @Test func filtersChainLeftToRightAndRawStillAppliesInURLs() throws {
        #expect(try text("{{vars.name | json | base64}}") == "IkFkYSI=")
        let url = try Template(parsing: "http://x.test/{{vars.credentials | base64}}")
        #expect(try url.render(for: .url, with: values) == "http://x.test/YWRhOnMzY3JldCDDqQ%3D%3D", "escaped after")
        let reference = try #require(try Template(parsing: "{{ a.b | json|base64 | raw }}").references.first)
        #expect(reference.filters == [.json, .base64] && reference.isRaw)
        #expect(reference.description == "{{a.b | json | base64 | raw}}")
    }

    @Test func aSoleTemplateInAJSONBodyTakesTheFilteredValue() throws {
        let body = JSONTemplate.object([(key: "n", value: .string(try Template(parsing: "{{a.list | length}}")))])
        #expect(try body.render(with: values).text == #"{"n":3}"#)
    }

    @Test func lengthOfANumberAndAnUnknownFilterAreErrorsNamingThem() throws {
        let numbers = TemplateValues(captures: ["a": ["n": .integer(5)]])
        #expect {
            try Template(parsing: "{{a.n | length}}").render(for: .text, with: numbers)
        } throws: { error in
            "\(error)".contains("{{a.n | length}}: '| length' takes text, a list or an object, got 5")
        }
        #expect {
            try Template(parsing: "{{a.b | md5}}")
        } throws: { error in
            "\(error)".contains("unknown filter 'md5' in {{a.b | md5}}; the filters are raw, base64")
        }
    }

    @Test func validateReportsAnUnknownFilterAndAFilteredForEachWithTheirLines() {
        let problems = errors(
            """
            steps:
              - { id: a, url: "http://x.test/", captures: { list: $.list } }
              - { id: b, url: "http://x.test/{{a.list | sha1}}" }
              - { id: c, url: "http://x.test/{{item}}", for_each: "{{a.list | length}}" }
            """)
        let messages = problems.map(\.description)
        #expect(
            messages.contains { $0.hasPrefix("flow.yaml:3:") && $0.contains("unknown filter 'sha1'") }, "\(messages)")
        #expect(
            messages.contains { $0.hasPrefix("flow.yaml:4:") && $0.contains("for_each takes the list itself") },
            "\(messages)")
    }
}
