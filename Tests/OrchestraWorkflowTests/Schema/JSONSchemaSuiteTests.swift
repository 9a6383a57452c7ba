import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// The official JSON-Schema-Test-Suite (draft 2020-12), for the keywords ``JSONSchema``
/// evaluates: every case of every file in `Tests/Data/json-schema-suite/` (copied unchanged
/// from json-schema-org/JSON-Schema-Test-Suite at 44401e0), except the groups listed in
/// ``skipped`` with the reason.
///
/// Files not shipped, for keywords not supported: `anchor`, `content` (annotations),
/// `defs` and `vocabulary` (they validate against the meta-schema, another document),
/// `dynamicRef`, `refRemote`, `unevaluatedItems`, `unevaluatedProperties`, and `optional/`
/// (`format` is an annotation here).
@Suite("JSON Schema: the official test suite", .timeLimit(.minutes(1)), .takesTurns)
struct JSONSchemaSuiteTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Data/json-schema-suite").standardizedFileURL

    static let files: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }()

    /// Groups not run, by file and description, with why: each uses something outside the
    /// subset (a `$ref` to another document or by `$id`, an anchor, `$dynamicRef`,
    /// `unevaluatedProperties`). A schema that uses an unsupported keyword is refused when it
    /// is read, so these fail loudly in a workflow, never pass by mistake.
    static let skipped: [String: [String: String]] = [
        "ref": [
            "remote ref, containing refs itself": "a $ref to the meta-schema (another document)",
            "Recursive references between schemas": "$ref by $id",
            "ref creates new scope when adjacent to keywords": "unevaluatedProperties",
            "refs with relative uris and defs": "$ref by $id",
            "relative refs with absolute uris and defs": "$ref by $id",
            "$id must be resolved against nearest parent, not just immediate parent": "$ref by $id",
            "order of evaluation: $id and $ref": "$ref by $id",
            "order of evaluation: $id and $anchor and $ref": "$ref to an anchor",
            "order of evaluation: $id and $ref on nested schema": "$ref by $id",
            "simple URN base URI with $ref via the URN": "$ref by $id (a URN)",
            "URN base URI with URN and JSON pointer ref": "$ref by $id (a URN)",
            "URN base URI with URN and anchor ref": "$ref to an anchor",
            "URN ref with nested pointer ref": "$ref by $id (a URN)",
            "ref to if": "$ref by $id",
            "ref to then": "$ref by $id",
            "ref to else": "$ref by $id",
            "ref with absolute-path-reference": "$ref by $id",
            "$id with file URI still resolves pointers - *nix": "$ref by $id (a file URI)",
            "$id with file URI still resolves pointers - windows": "$ref by $id (a file URI)",
        ],
        "not": ["collect annotations inside a 'not', even if collection is disabled": "unevaluatedProperties"],
    ]

    struct Group: Decodable {
        var description: String
        var tests: [Case]
    }

    struct Case: Decodable {
        var description: String
        var valid: Bool
    }

    @Test("every case of the file passes", arguments: files)
    func file(_ name: String) throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent("\(name).json"))
        let groups = try JSONDecoder().decode([Group].self, from: data)
        // The schemas and values as the workflow reads them (numbers keep their text).
        guard case .array(let values) = try JSONValue(parsing: data) else {
            Issue.record("\(name).json is not a list")
            return
        }
        #expect(!groups.isEmpty)
        var ran = 0
        for (group, value) in zip(groups, values) {
            if Self.skipped[name]?[group.description] != nil { continue }
            let schema: JSONSchema
            do {
                schema = try JSONSchema(try #require(value["schema"]), name: group.description)
            } catch {
                Issue.record("\(name).json, \(group.description): the schema was refused: \(error)")
                continue
            }
            guard case .array(let tests) = value["tests"] else { continue }
            for (test, testValue) in zip(group.tests, tests) {
                let failures = try JSONSchemaValidator(schema: schema).validate(try #require(testValue["data"]))
                #expect(
                    failures.isEmpty == test.valid,
                    "\(name).json, \(group.description): \(test.description): \(failures.map(\.description))")
                ran += 1
            }
        }
        #expect(ran > 0)
    }

    /// Every skipped group is in its file: a list that names groups the suite no longer has
    /// would hide nothing, but would mislead.
    @Test func everySkippedGroupExists() throws {
        for (name, groups) in Self.skipped where !groups.isEmpty {
            let data = try Data(contentsOf: Self.directory.appendingPathComponent("\(name).json"))
            let descriptions = Set(try JSONDecoder().decode([Group].self, from: data).map(\.description))
            for group in groups.keys { #expect(descriptions.contains(group), "\(name).json has no group '\(group)'") }
        }
    }
}
