import Foundation

/// A JSON Schema that an assertion checks a response against (`- $: { schema: user.schema.json }`),
/// read and checked once, when the workflow is read.
///
/// The subset of draft 2020-12 it evaluates: the core and validation vocabularies' `type`,
/// `enum`, `const`, `properties`, `required`, `additionalProperties`, `patternProperties`,
/// `propertyNames`, `dependentRequired`, `dependentSchemas`, `minProperties`/`maxProperties`,
/// `items`, `prefixItems`, `contains`/`minContains`/`maxContains`, `minItems`/`maxItems`,
/// `uniqueItems`, `minLength`/`maxLength`, `pattern`, `minimum`/`maximum`/`exclusiveMinimum`/
/// `exclusiveMaximum`, `multipleOf`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/`else`, `$ref`
/// to a place in the same document (`#`, `#/$defs/user`), `$defs`, and boolean schemas.
/// `format` is an annotation (not checked), as the specification's default says; other
/// keywords nobody defined are ignored, as it says too. The keywords of 2020-12 it does not
/// evaluate (``unsupportedKeywords``) are refused when the schema is read, so a schema never
/// passes because a keyword was skipped.
///
/// ```swift
/// let schema = try JSONSchema(JSONValue(parsing: Data(#"{"type":"object","required":["id"]}"#.utf8)), name: "user")
/// let failures = try JSONSchemaValidator(schema: schema).validate(.object([]))
/// failures.first?.description     // "(root): required property 'id' is missing"
/// ```
package struct JSONSchema: Sendable, Hashable {
    /// The schema document.
    package let root: JSONValue
    /// How messages name it: the path written in the workflow, or `inline schema`.
    package let name: String
    /// The place each `$ref` of the document points to, by its text.
    let targets: [String: JSONValue]
    /// Every `pattern` and `patternProperties` key, compiled.
    let regexes: [String: BoundedRegex]

    /// The largest schema file read: 1 MiB. Why: a schema is parsed and held whole; a path to a
    /// large file by mistake would otherwise be read until memory runs out.
    package static let maximumFileSize = 1 << 20
    /// The most failures one check lists; the rest are summed up.
    package static let maximumFailures = 5

    /// The keywords evaluated, and the annotations read without a check.
    package static let supportedKeywords = [
        "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
        "propertyNames", "dependentRequired", "dependentSchemas", "minProperties", "maxProperties", "items",
        "prefixItems", "contains", "minContains", "maxContains", "minItems", "maxItems", "uniqueItems", "minLength",
        "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "allOf",
        "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$defs",
    ]
    /// Keywords of draft 2020-12 that are not evaluated: a schema that uses one is refused
    /// (a `$ref` to another document or to an anchor is refused too).
    package static let unsupportedKeywords = [
        "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
    ]
    /// The names `type` takes.
    static let typeNames = ["null", "boolean", "object", "array", "number", "string", "integer"]

    /// Reads `root` as a schema, checking every keyword it evaluates: its value has the right
    /// type (`minLength` a non-negative integer, `required` a list of strings…), every pattern
    /// compiles, every `$ref` points into the document.
    ///
    /// - Parameter name: How messages name the schema.
    /// - Throws: ``JSONSchemaProblem`` naming the first keyword that is wrong, by its JSON
    ///   pointer in the schema.
    ///
    /// Complexity: linear in the size of the schema; iterative, whatever its nesting.
    package init(_ root: JSONValue, name: String) throws(JSONSchemaProblem) {
        let root = Self.materialized(root)
        var checker = JSONSchemaChecker(root: root)
        try checker.check()
        self.root = root
        self.name = name
        targets = checker.targets
        regexes = checker.regexes
    }

    /// Reads a schema file's JSON text (at most ``maximumFileSize`` bytes).
    ///
    /// - Throws: ``JSONSchemaProblem``: the file is too large, is not JSON (its message gives
    ///   the line and column), or is not a schema.
    package init(data: Data, name: String) throws(JSONSchemaProblem) {
        guard data.count <= Self.maximumFileSize else {
            throw JSONSchemaProblem(
                [], "is larger than \(Workflow.describeSize(Self.maximumFileSize)) (the limit for a schema file)")
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: data)
        } catch {
            let text = String(decoding: data, as: UTF8.self)
            let location = WorkflowParser.location(ofByte: min(error.offset, data.count), in: text)
            throw JSONSchemaProblem(
                [], "is not JSON: line \(location.line), column \(location.column): \(error.reason)")
        }
        try self.init(value, name: name)
    }

    /// `value` with its arrays and objects as lists of values, not views of a parsed document:
    /// a schema is read once per value it checks, and a view decodes each key and value every
    /// time it is read. Iterative (an explicit stack), whatever the nesting.
    static func materialized(_ root: JSONValue) -> JSONValue {
        /// An array or object being copied: its keys and children, and the values copied so far.
        struct Container {
            var keys: [String]?
            var children: [JSONValue]
            var values: [JSONValue] = []
        }
        var stack: [Container] = []
        var node = root
        while true {
            var value: JSONValue
            switch node {
            case .array(let elements) where !elements.isEmpty:
                stack.append(Container(keys: nil, children: Array(elements)))
                node = stack[stack.count - 1].children[0]
                continue
            case .object(let members) where !members.isEmpty:
                stack.append(Container(keys: members.map(\.key), children: members.map(\.value)))
                node = stack[stack.count - 1].children[0]
                continue
            case .array: value = .array([JSONValue]())
            case .object: value = .object([JSONValue.Member]())
            default: value = node
            }
            // Put the value into its container; close every container it completes.
            while let top = stack.indices.last {
                stack[top].values.append(value)
                let next = stack[top].values.count
                if next < stack[top].children.count {
                    node = stack[top].children[next]
                    break
                }
                let done = stack.removeLast()
                if let keys = done.keys {
                    value = .object(zip(keys, done.values).map { JSONValue.Member($0, $1) })
                } else {
                    value = .array(done.values)
                }
            }
            if stack.isEmpty { return value }
        }
    }

    package static func == (lhs: JSONSchema, rhs: JSONSchema) -> Bool {
        lhs.name == rhs.name && lhs.root == rhs.root
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(root)
    }

    /// The place `reference` points to, when it is a pointer into the document (`#`,
    /// `#/$defs/user`, percent-encoded as a URI fragment, `~0` and `~1` as JSON Pointer writes
    /// `~` and `/`); `nil` otherwise.
    static func resolve(_ reference: String, in root: JSONValue) -> JSONValue? {
        guard let tokens = pointerTokens(reference) else { return nil }
        var value = root
        for token in tokens {
            switch value {
            case .object(let members):
                guard let member = members[token] else { return nil }
                value = member
            case .array(let elements):
                guard let index = Int(token), String(index) == token, elements.indices.contains(index) else {
                    return nil
                }
                value = elements[index]
            default:
                return nil
            }
        }
        return value
    }

    /// The tokens of a `#/a/b` reference, decoded; `nil` for a reference that is not a pointer
    /// into the same document.
    static func pointerTokens(_ reference: String) -> [String]? {
        guard reference.hasPrefix("#") else { return nil }
        guard let fragment = String(reference.dropFirst()).removingPercentEncoding else { return nil }
        if fragment.isEmpty { return [] }
        guard fragment.hasPrefix("/") else { return nil }
        return fragment.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }

    /// `tokens` as a JSON Pointer (`/orders/0/id`), `~` and `/` escaped.
    static func pointer(_ tokens: some Sequence<String>) -> String {
        tokens.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }
            .joined()
    }
}

/// A schema that cannot be used: the keyword, by its JSON pointer in the schema, and what is
/// wrong with it.
package struct JSONSchemaProblem: Error, CustomStringConvertible, Equatable {
    /// Where in the schema: the tokens of its JSON pointer (empty for the whole schema).
    package var tokens: [String]
    package var message: String

    init(_ tokens: [String], _ message: String) {
        self.tokens = tokens
        self.message = message
    }

    /// `/properties/id/type: …`, or the message alone for the whole schema.
    package var description: String {
        tokens.isEmpty ? message : "\(JSONSchema.pointer(tokens)): \(message)"
    }
}
