import Foundation
import OrchestraWorkflow
import TestSupport
import Testing

@Suite("Values quoted in messages", .timeLimit(.minutes(1)), .takesTurns)
struct MessageValueTests {
    @Test("text of at most 200 characters is kept; longer text keeps its first 200 and says its length")
    func shortening() {
        #expect(MessageValue.shortened("abc") == "abc")
        let limit = String(repeating: "a", count: 200)
        #expect(MessageValue.shortened(limit) == limit)
        #expect(MessageValue.shortened(limit + "b") == limit + "… (201 characters)")
        // Characters, not bytes: 150 two-byte letters are kept whole, 250 are cut at 200.
        let accents = String(repeating: "é", count: 150)
        #expect(MessageValue.shortened(accents) == accents)
        let more = String(repeating: "é", count: 250)
        #expect(MessageValue.shortened(more) == String(repeating: "é", count: 200) + "… (250 characters)")
        #expect(MessageValue.shortened(String(repeating: "👨‍👩‍👧", count: 201), limit: 1) == "👨‍👩‍👧… (201 characters)")
        let value = String(repeating: "x", count: 1_000)
        #expect("got '\(short: value)'" == "got '\(String(repeating: "x", count: 200))… (1000 characters)'")
    }

    /// A value of 1,000,000 characters, in each place a message quotes one.
    static let huge = String(repeating: "a", count: 1_000_000)

    static let places: [(yaml: String, length: Int)] = [
        ("steps:\n  - id: \"\(huge)!\"\n    url: \"http://x.test\"\n", 1_000_001),
        ("steps:\n  - id: a\n    url: \"\(huge)\"\n", 1_000_000),
        ("steps:\n  - id: a\n    url: \"http://x.test\"\n    method: \"\(huge) \"\n", 1_000_001),
        ("steps:\n  - id: a\n    url: \"http://x.test\"\n    timeout: \"\(huge)\"\n", 1_000_000),
        ("steps:\n  - id: a\n    url: \"http://x.test/{{vars.\(huge)}}\"\n", 1_000_000),
        ("steps:\n  - id: a\n    url: \"http://x.test\"\n    needs: \"\(huge)\"\n", 1_000_000),
        ("steps:\n  - id: a\n    url: \"http://x.test\"\n    captures: { t: \"\(huge)\" }\n", 1_000_000),
        ("steps:\n  - id: a\n    url: \"http://x.test\"\n    headers: { X-A: \"{{\(huge)\" }\n", 1_000_002),
    ]

    @Test(
        "every message about a value of a million characters quotes 200 of them and its length",
        .ownThread, arguments: 0..<places.count)
    func hugeValues(place: Int) throws {
        let (yaml, length) = Self.places[place]
        let found = errors(yaml)
        let error = try #require(found.first, "no error for place \(place)")
        #expect(error.description.contains("… (\(length) characters)"), "\(error.description.prefix(600))")
        #expect(found.allSatisfy { $0.description.count < 1_000 }, "\(found.map { $0.description.prefix(600) })")
    }

    @Test("a problem in a node that aliases share is reported once, under the first step that meets it")
    func aliasedProblemOnce() {
        let found = errors(
            """
            steps:
              - { id: a, url: "http://x.test", expect: &codes [200, nope] }
              - { id: b, url: "http://x.test", expect: *codes }
              - { id: c, url: "http://x.test", expect: *codes }
            """)
        #expect(found.count == 1, "\(found)")
        #expect(
            found.first?.step == "a" && found.first?.message == "must be an HTTP status (100–599), got 'nope'",
            "\(found)")
    }

    @Test("an id that is a list or a mapping must be text; it is not a missing id")
    func idOfTheWrongType() {
        let found = errors(
            "steps:\n  - { id: [x], url: \"http://x.test\" }\n  - { id: { a: 1 }, url: \"http://x.test\" }\n")
        #expect(found.map(\.message) == ["must be text, got a list", "must be text, got a mapping"], "\(found)")
        #expect(found.map(\.field) == ["steps[0].id", "steps[1].id"])
    }
}
