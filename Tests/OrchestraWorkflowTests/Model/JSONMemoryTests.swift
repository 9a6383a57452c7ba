import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// What a parsed JSON value costs in memory, counted (not timed): a captured body costs a
/// small multiple of its text, where a tree of values cost 4 to 16 times (issue 32: a captured
/// 63 MB array took about 1 GB).
///
/// One case at a time: each computes for seconds on a thread of its own, and ten such threads
/// at once left the cooperative pool's two a sixth of the cores (under ThreadSanitizer the
/// other suites' awaits then took 45 s instead of one).
@Suite("JSON values: memory", .serialized, .timeLimit(.minutes(3)), .ownThread, .takesTurns)
struct JSONMemoryTests {
    /// A shape of body: its name, one element's text from its index, and the most the parsed
    /// value may cost per byte of text.
    struct Shape: Sendable, CustomTestStringConvertible {
        let name: String
        let element: @Sendable (Int) -> String
        let bound: Int
        var testDescription: String { name }
    }

    static let shapes: [Shape] = [
        Shape(name: "small objects", element: { #"{"id":\#($0),"ok":true}"# }, bound: 3),
        Shape(
            name: "user records",
            element: { #"{"id":\#($0),"name":"User \#($0)","email":"user\#($0)@example.com","score":\#($0).5}"# },
            bound: 3),
        Shape(name: "numbers", element: { "\($0)" }, bound: 3),
        Shape(name: "one-digit numbers (the densest list)", element: { "\($0 % 10)" }, bound: 3),
        Shape(name: "strings with escapes", element: { #""line \#($0)\n\u00e9""# }, bound: 3),
        Shape(name: "nested lists (the densest nesting)", element: { _ in "[[[0]]]" }, bound: 5),
    ]

    /// A list of `count` elements of `shape`, as compact JSON text.
    static func text(of shape: Shape, count: Int) -> String {
        "[" + (0..<count).map(shape.element).joined(separator: ",") + "]"
    }

    @Test(arguments: shapes)
    func aParsedBodyCostsASmallMultipleOfItsText(_ shape: Shape) throws {
        let text = Self.text(of: shape, count: 20_000)
        let value = try JSONValue(parsing: Data(text.utf8))
        let cost = value.memoryCost
        // The bound, and the value itself (a few dozen bytes).
        #expect(cost <= shape.bound * text.utf8.count + 64, "\(cost) bytes for \(text.utf8.count) bytes of text")
        // The same value read back is the same value, whichever way it is held.
        let lists = value.asLists
        #expect(lists == value && value == lists)
        #expect(lists.hashValue == value.hashValue)
        #expect(try JSONValue(parsing: Data(value.text.utf8)) == value)
    }

    /// The representation this replaces: a tree (a `JSONValue` per element, an array per
    /// object, a `String` per key) costs several times more than the bound for most shapes.
    @Test(arguments: shapes.prefix(3))
    func aTreeOfValuesCostsMoreThanTheBound(_ shape: Shape) throws {
        let text = Self.text(of: shape, count: 20_000)
        let tree = try JSONValue(parsing: Data(text.utf8)).asLists
        #expect(tree.memoryCost > shape.bound * text.utf8.count)
    }

    @Test func viewsReadLikeLists() throws {
        let text = #"{"a":[1,{"b":"c\"d"},[],{}],"e\u00e9":null,"a":2,"n":1.50}"#
        let value = try JSONValue(parsing: Data(text.utf8))
        #expect(value["a"]?[1]?["b"] == .string("c\"d"))
        #expect(value["eé"] == .null)
        #expect(value["n"] == .number(JSONNumber("1.50")!))
        #expect(value["a"]?[2] == .array([]) && value["a"]?[3] == .object([]))
        #expect(value["a"]?[4] == nil && value["missing"] == nil)
        guard case .object(let members) = value else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.key) == ["a", "eé", "a", "n"])
        #expect(value.prettyText.contains("\n  \"a\": [\n    1,"))
        #expect(try JSONValue(parsing: Data(value.text.utf8)) == value)
    }

    @Test func aSmallPartOfALargeBodyIsDetachedAndMostOfItIsNot() throws {
        let records = Self.text(of: Self.shapes[1], count: 5_000)
        let text = #"{"meta":{"page":1,"tags":["a",{"b":[2]}]},"items":"# + records + "}"
        let value = try JSONValue(parsing: Data(text.utf8))
        let meta = try #require(value["meta"])
        // A view of `meta` keeps the whole document; detached, it costs what it holds.
        #expect(meta.memoryCost > text.utf8.count)
        #expect(meta.detached.memoryCost < 200)
        #expect(meta.detached == meta)
        // Most of the document (or all of it) is kept as it is, not copied.
        let items = try #require(value["items"])
        #expect(items.detached.memoryCost == items.memoryCost)
        #expect(value.detached.memoryCost == value.memoryCost)
    }

    @Test func aSmallValueTakenFromALargeBodyIsDecodedNotKeptAsAView() throws {
        let text = Self.text(of: Self.shapes[1], count: 1_000)
        let value = try JSONValue(parsing: Data(text.utf8))
        // A string or number is decoded: it does not keep the document.
        let name = try #require(value[999]?["name"])
        #expect(name == .string("User 999"))
        #expect(name.memoryCost < 64)
    }
}
