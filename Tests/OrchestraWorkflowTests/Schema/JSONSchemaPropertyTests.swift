import Foundation
@_spi(Simulation) import Orchestra
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// Random schemas (any keyword, with values of the right type or not) and random values: the
/// checker refuses or accepts without a crash, the evaluation ends, and the applicators agree
/// with each other (`not`, `allOf`, `anyOf`, `oneOf`, `if`). Seeded: a failure prints its
/// seed; `ORCHESTRA_SCHEMA_SEED=…` replays it.
@Suite("JSON Schema: random schemas and values", .timeLimit(.minutes(1)), .takesTurns)
struct JSONSchemaPropertyTests {
    static let keywords = [
        "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
        "propertyNames", "dependentRequired", "dependentSchemas", "minProperties", "maxProperties", "items",
        "prefixItems", "contains", "minContains", "maxContains", "minItems", "maxItems", "uniqueItems", "minLength",
        "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "allOf",
        "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$defs", "format", "x-unknown",
    ]
    static let names = ["a", "b", "id", "a/b", "~"]

    struct Random {
        var generator: SplitMix64

        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }
        mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }

        /// A value a schema keyword or a response may hold.
        mutating func value(depth: Int = 0) -> JSONValue {
            switch int(0...(depth > 2 ? 5 : 7)) {
            case 0: return .null
            case 1: return .bool(chance(50))
            case 2: return .integer(int(-3...12))
            case 3: return .number(JSONNumber(["1.5", "0.5", "2.0", "-0.25", "1e2", "0.1"][int(0...5)])!)
            case 4, 5: return .string(["", "a", "id", "ab", "abc", "é", "e\u{301}", "10"][int(0...7)])
            case 6: return .array((0..<int(0...3)).map { _ in value(depth: depth + 1) })
            default:
                return .object(
                    (0..<int(0...3)).map { _ in
                        JSONValue.Member(JSONSchemaPropertyTests.names[int(0...4)], value(depth: depth + 1))
                    })
            }
        }

        /// A schema: mostly keywords with values of their type, some of another.
        mutating func schema(depth: Int = 0) -> JSONValue {
            if chance(10) { return .bool(chance(70)) }
            var members: [JSONValue.Member] = []
            for _ in 0..<int(0...(depth > 2 ? 1 : 3)) {
                let key = JSONSchemaPropertyTests.keywords[int(0...JSONSchemaPropertyTests.keywords.count - 1)]
                members.append(JSONValue.Member(key, chance(8) ? value() : operand(key, depth: depth)))
            }
            return .object(members)
        }

        mutating func operand(_ key: String, depth: Int) -> JSONValue {
            switch key {
            case "type":
                let types = ["null", "boolean", "object", "array", "number", "string", "integer"]
                return chance(50)
                    ? .string(types[int(0...6)]) : .array([.string(types[int(0...2)]), .string(types[int(3...6)])])
            case "enum": return .array((0..<int(1...3)).map { _ in value() })
            case "const": return value()
            case "properties", "patternProperties", "dependentSchemas", "$defs":
                let keys = key == "patternProperties" ? ["^a", "b$", "."] : JSONSchemaPropertyTests.names
                return .object(
                    (0..<int(1...2)).map { _ in
                        JSONValue.Member(keys[int(0...keys.count - 1)], schema(depth: depth + 1))
                    })
            case "required": return .array([.string(JSONSchemaPropertyTests.names[int(0...4)])])
            case "dependentRequired": return .object([JSONValue.Member("a", .array([.string("b")]))])
            case "pattern": return .string(["^a", "b", "^$", "[0-9]"][int(0...3)])
            case "uniqueItems": return .bool(chance(50))
            case "multipleOf": return [JSONValue.integer(2), .integer(3), .number(JSONNumber("0.5")!)][int(0...2)]
            case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum": return .integer(int(-2...5))
            case "prefixItems", "allOf", "anyOf", "oneOf":
                return .array((0..<int(1...2)).map { _ in schema(depth: depth + 1) })
            case "$ref": return .string(["#", "#/$defs/a", "#/properties/a"][int(0...2)])
            case "format": return .string("email")
            case "x-unknown": return value()
            default:
                return key.hasPrefix("min") || key.hasPrefix("max") ? .integer(int(0...3)) : schema(depth: depth + 1)
            }
        }
    }

    /// Whether `value` matches `schema`, or `nil` when the evaluation stopped (too deep).
    static func matches(_ schema: JSONValue, _ value: JSONValue) -> Bool? {
        guard let compiled = try? JSONSchema(schema, name: "random") else { return nil }
        let deadline = ContinuousClock.now + .seconds(5)
        return (try? JSONSchemaValidator(schema: compiled, deadline: deadline, limit: .seconds(5)).validate(value))?
            .isEmpty
    }

    @Test("the applicators agree with each other on random schemas and values", .ownThread)
    func applicators() {
        let base = ProcessInfo.processInfo.environment["ORCHESTRA_SCHEMA_SEED"].flatMap(UInt64.init) ?? 37
        var accepted = 0
        for offset in 0..<3_000 {
            let seed = base &+ UInt64(offset)
            var random = Random(generator: SplitMix64(seed: seed))
            let schema = random.schema()
            let other = random.schema()
            let value = random.value()
            guard let valid = Self.matches(schema, value), let otherValid = Self.matches(other, value) else { continue }
            accepted += 1
            // A `$ref` to `#` would point to the wrapper: those are checked alone only.
            guard !schema.text.contains("$ref"), !other.text.contains("$ref") else { continue }
            func wrapped(_ key: String, _ operand: JSONValue) -> JSONValue { .object([JSONValue.Member(key, operand)]) }
            let expectations: [(String, JSONValue, Bool)] = [
                ("not", wrapped("not", schema), !valid),
                ("allOf", wrapped("allOf", .array([schema])), valid),
                ("anyOf", .object([JSONValue.Member("anyOf", .array([schema, other]))]), valid || otherValid),
                ("oneOf", .object([JSONValue.Member("oneOf", .array([schema, other]))]), valid != otherValid),
                (
                    "if",
                    .object([
                        JSONValue.Member("if", schema), JSONValue.Member("then", other),
                        JSONValue.Member("else", .bool(true)),
                    ]), !valid || otherValid
                ),
            ]
            for (name, combined, expected) in expectations {
                guard let result = Self.matches(combined, value) else { continue }
                #expect(
                    result == expected,
                    "seed \(seed): \(name): \(combined.text) on \(value.text) gave \(result), \(schema.text) alone \(valid)"
                )
            }
        }
        #expect(accepted > 500, "only \(accepted) random schemas were accepted")
    }
}
