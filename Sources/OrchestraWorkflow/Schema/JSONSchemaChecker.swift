/// Checks a schema document once, when it is read: the value of every keyword
/// ``JSONSchema`` evaluates, every pattern, every `$ref`. What it finds is kept for the
/// evaluation (the places `$ref`s point to, the compiled patterns).
///
/// Walks the subschemas with an explicit list, not recursion, and each place once (a `$ref`
/// cycle is read once), so a schema of any nesting or shape is checked in linear time.
struct JSONSchemaChecker {
    let root: JSONValue
    private(set) var targets: [String: JSONValue] = [:]
    private(set) var regexes: [String: BoundedRegex] = [:]
    /// Subschemas still to check, with their pointers.
    private var pending: [(value: JSONValue, tokens: [String])] = []

    init(root: JSONValue) {
        self.root = root
    }

    /// Keywords whose value is one schema.
    private static let schemaKeywords: Set<String> = [
        "additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames",
    ]
    /// Keywords whose value is an object of schemas.
    private static let schemaMapKeywords: Set<String> = [
        "properties", "patternProperties", "$defs", "dependentSchemas",
    ]
    /// Keywords whose value is a non-empty list of schemas.
    private static let schemaListKeywords: Set<String> = ["prefixItems", "allOf", "anyOf", "oneOf"]
    private static let countKeywords: Set<String> = [
        "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minContains",
        "maxContains",
    ]
    private static let numberKeywords: Set<String> = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]

    /// - Throws: ``JSONSchemaProblem`` for the first keyword that is wrong.
    mutating func check() throws(JSONSchemaProblem) {
        pending = [(root, [])]
        while let (value, tokens) = pending.popLast() {
            try checkSchema(value, at: tokens)
        }
        // A `$id` below the root starts another resource, whose `#/…` references are read from
        // it, not from the root: refused rather than resolved differently than the standard.
        if let nested = nestedID, !targets.isEmpty {
            throw JSONSchemaProblem(
                nested,
                "a $id below the root is not supported in a schema that uses $ref (each $ref is read from the root of the file)"
            )
        }
    }

    /// The first `$id` found below the root, if any.
    private var nestedID: [String]?

    private mutating func checkSchema(_ value: JSONValue, at tokens: [String]) throws(JSONSchemaProblem) {
        let members: JSONObject
        switch value {
        case .bool: return
        case .object(let object): members = object
        default:
            throw JSONSchemaProblem(tokens, "a schema is an object or true or false, got \(Self.describe(value))")
        }
        for member in members {
            let key = member.key
            let here = tokens + [key]
            let value = member.value
            if Self.schemaKeywords.contains(key) {
                pending.append((value, here))
            } else if Self.schemaMapKeywords.contains(key) {
                guard case .object(let entries) = value else { throw problem(here, "an object of schemas", value) }
                for entry in entries {
                    if key == "patternProperties" { try compile(entry.key, at: here + [entry.key]) }
                    pending.append((entry.value, here + [entry.key]))
                }
            } else if Self.schemaListKeywords.contains(key) {
                guard case .array(let elements) = value, !elements.isEmpty else {
                    throw problem(here, "a non-empty list of schemas", value)
                }
                for (index, element) in elements.enumerated() { pending.append((element, here + [String(index)])) }
            } else if Self.countKeywords.contains(key) {
                guard Self.count(value) != nil else { throw problem(here, "a whole number, 0 or more", value) }
            } else if Self.numberKeywords.contains(key) {
                guard Self.isNumber(value) else { throw problem(here, "a number", value) }
            } else {
                try checkOther(key, value, at: here)
            }
        }
    }

    private mutating func checkOther(_ key: String, _ value: JSONValue, at here: [String]) throws(JSONSchemaProblem) {
        switch key {
        case "type":
            let names: [JSONValue]
            if case .array(let list) = value { names = Array(list) } else { names = [value] }
            var seen: Set<String> = []
            for name in names {
                guard case .string(let text) = name else {
                    throw problem(here, "a type name or a list of them", value)
                }
                guard JSONSchema.typeNames.contains(text) else {
                    let suggestion = NodeReader.closest(to: text, in: JSONSchema.typeNames).map {
                        "did you mean '\($0)'? "
                    }
                    throw JSONSchemaProblem(
                        here,
                        "unknown type '\(short: text)'; \(suggestion ?? "")the types are \(JSONSchema.typeNames.joined(separator: ", "))"
                    )
                }
                guard seen.insert(text).inserted else { throw JSONSchemaProblem(here, "'\(text)' is listed twice") }
            }
        case "enum":
            guard case .array = value else { throw problem(here, "a list of values", value) }
        case "required":
            try stringList(value, at: here)
        case "dependentRequired":
            guard case .object(let entries) = value else { throw problem(here, "an object of lists of names", value) }
            for entry in entries { try stringList(entry.value, at: here + [entry.key]) }
        case "multipleOf":
            guard Self.isNumber(value), let number = AssertionEvaluator.number(value, fromText: false),
                number.doubleValue > 0
            else { throw problem(here, "a number greater than 0", value) }
        case "pattern":
            guard case .string(let pattern) = value else { throw problem(here, "a regular expression", value) }
            try compile(pattern, at: here)
        case "uniqueItems":
            guard case .bool = value else { throw problem(here, "true or false", value) }
        case "format":
            guard case .string = value else { throw problem(here, "a format name", value) }
        case "$id":
            if here.count > 1, nestedID == nil { nestedID = here }
        case "$ref":
            guard case .string(let reference) = value else { throw problem(here, "a reference", value) }
            guard targets[reference] == nil else { return }
            guard JSONSchema.pointerTokens(reference) != nil else {
                throw JSONSchemaProblem(
                    here,
                    "'\(short: reference)' is not supported: a $ref points into the same schema (#, #/$defs/NAME), not to another document or an anchor"
                )
            }
            guard let target = JSONSchema.resolve(reference, in: root) else {
                throw JSONSchemaProblem(here, "'\(short: reference)' points to nothing in the schema")
            }
            targets[reference] = target
            pending.append((target, JSONSchema.pointerTokens(reference) ?? []))
        default:
            if JSONSchema.unsupportedKeywords.contains(key) {
                throw JSONSchemaProblem(
                    here, "'\(key)' is not supported (the keywords supported are listed in Examples/README.md)")
            }
        // Any other keyword is an annotation or unknown: ignored, as the specification says.
        }
    }

    private mutating func compile(_ pattern: String, at here: [String]) throws(JSONSchemaProblem) {
        guard regexes[pattern] == nil else { return }
        do {
            regexes[pattern] = try BoundedRegex(pattern)
        } catch {
            throw JSONSchemaProblem(here, "'\(short: pattern)' is not a regular expression: \(error)")
        }
    }

    private func stringList(_ value: JSONValue, at here: [String]) throws(JSONSchemaProblem) {
        guard case .array(let elements) = value else { throw problem(here, "a list of property names", value) }
        var seen: Set<String> = []
        for element in elements {
            guard case .string(let name) = element else { throw problem(here, "a list of property names", value) }
            guard seen.insert(name).inserted else { throw JSONSchemaProblem(here, "'\(short: name)' is listed twice") }
        }
    }

    private func problem(_ here: [String], _ expected: String, _ value: JSONValue) -> JSONSchemaProblem {
        JSONSchemaProblem(here, "must be \(expected), got \(Self.describe(value))")
    }

    /// A value as a message names it: its JSON, shortened.
    static func describe(_ value: JSONValue) -> String {
        AssertionEvaluator.text(value)
    }

    static func isNumber(_ value: JSONValue) -> Bool {
        switch value {
        case .integer, .number: true
        default: false
        }
    }

    /// A count keyword's value: a whole number, 0 or more (`2.0` too, as the specification
    /// allows); saturated at `Int.max`.
    static func count(_ value: JSONValue) -> Int? {
        switch value {
        case .integer(let count): return count >= 0 ? count : nil
        case .number(let number):
            let double = number.doubleValue
            guard double >= 0, double.rounded() == double else { return nil }
            return double >= Double(Int.max) ? Int.max : Int(double)
        default: return nil
        }
    }
}
