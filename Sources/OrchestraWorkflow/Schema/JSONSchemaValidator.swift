import Foundation

/// Checks a JSON value against a ``JSONSchema``, listing the first failures
/// (``JSONSchema/maximumFailures``), each with the JSON pointer of the value and the keyword:
/// `/orders/0/id: expected integer, got string`.
///
/// The work is bounded three ways, since both the value (a response) and the schema may be
/// hostile: the evaluation goes at most ``maximumDepth`` schemas deep (a `$ref` that refers to
/// itself forever stops there, with a message, instead of overflowing the stack), it gives up
/// at `deadline` (a schema whose `anyOf`s multiply the work, a pattern that backtracks), and
/// it stops when the task is cancelled. Each is checked every few hundred steps.
struct JSONSchemaValidator {
    /// How deep schemas are applied inside each other (each subschema and `$ref` is a level).
    /// Why: the evaluation recurses once per level, and a bound keeps the stack small on any
    /// thread; 128 is far more than a schema written by hand nests.
    static let maximumDepth = 128

    /// One way the value does not match.
    struct Failure: Sendable, Hashable, CustomStringConvertible {
        /// The value's JSON pointer, from the checked value (empty: the value itself).
        var pointer: String
        var message: String

        /// `/orders/0/id: expected integer, got string`; `(root): …` for the value itself.
        var description: String { "\(pointer.isEmpty ? "(root)" : pointer): \(message)" }
    }

    /// Why the evaluation stopped before it knew the answer.
    struct Stopped: Error, CustomStringConvertible {
        var description: String
        var isCancellation = false
    }

    let schema: JSONSchema
    /// When the evaluation gives up, and the bound it stands for (for the message).
    var deadline: ContinuousClock.Instant
    var limit: Duration

    init(
        schema: JSONSchema, deadline: ContinuousClock.Instant = .now + BoundedRegex.defaultTimeLimit,
        limit: Duration = BoundedRegex.defaultTimeLimit
    ) {
        self.schema = schema
        self.deadline = deadline
        self.limit = limit
    }

    /// The ways `value` does not match the schema: empty when it matches; at most
    /// ``JSONSchema/maximumFailures`` + 1 of them (the evaluation stops there): one more than
    /// a message lists says that there are more.
    ///
    /// - Throws: ``Stopped`` when the evaluation goes too deep, passes its deadline or is
    ///   cancelled (then `isCancellation`).
    func validate(_ value: JSONValue) throws(Stopped) -> [Failure] {
        try evaluate(value).failures
    }

    /// ``validate(_:)``, and the units of work it took (tests: a check linear in its input).
    func evaluate(_ value: JSONValue) throws(Stopped) -> (failures: [Failure], work: Int) {
        var run = JSONSchemaEvaluation(
            schema: schema, deadline: deadline, limit: limit)
        _ = try run.check(schema.root, value, depth: 0, collect: true)
        return (run.failures, run.work)
    }
}

/// One evaluation: the path to the value being checked, the failures so far, the work done.
struct JSONSchemaEvaluation {
    typealias Failure = JSONSchemaValidator.Failure
    typealias Stopped = JSONSchemaValidator.Stopped

    let schema: JSONSchema
    let deadline: ContinuousClock.Instant
    let limit: Duration
    /// The tokens of the pointer to the value being checked.
    private var path: [String] = []
    private(set) var failures: [Failure] = []
    /// Work done since the bounds were last checked.
    private var steps = 0
    /// Work done in all (tests read it: a check linear in its input).
    private(set) var work = 0

    init(schema: JSONSchema, deadline: ContinuousClock.Instant, limit: Duration) {
        self.schema = schema
        self.deadline = deadline
        self.limit = limit
    }

    /// Whether the list is full (one more than a message lists): a listing check then stops
    /// at its first failure.
    var isFull: Bool { failures.count > JSONSchema.maximumFailures }

    /// Counts `amount` of work, checking the deadline and cancellation every 256 units.
    mutating func tick(_ amount: Int = 1) throws(Stopped) {
        steps += amount
        work += amount
        guard steps >= 256 else { return }
        steps = 0
        if Task.isCancelled { throw Stopped(description: "cancelled", isCancellation: true) }
        if ContinuousClock.now >= deadline {
            throw Stopped(
                description:
                    "the schema check gave up after \(StepErrors.format(limit)) (the time a response's checks may take)"
            )
        }
    }

    /// Records a failure at the current value (`collect` only).
    mutating func fail(_ message: @autoclosure () -> String, collect: Bool) {
        guard collect, !isFull else { return }
        failures.append(Failure(pointer: MessageValue.shortened(JSONSchema.pointer(path)), message: message()))
    }

    /// Whether `value` matches `schema`; with `collect`, its failures are listed.
    mutating func check(_ schema: JSONValue, _ value: JSONValue, depth: Int, collect: Bool) throws(Stopped) -> Bool {
        try tick()
        guard depth < JSONSchemaValidator.maximumDepth else {
            throw Stopped(
                description:
                    "\(path.isEmpty ? "(root)" : MessageValue.shortened(JSONSchema.pointer(path))): the schema applies more than \(JSONSchemaValidator.maximumDepth) schemas inside each other here (a $ref that refers to itself without end?)"
            )
        }
        let members: JSONObject
        switch schema {
        case .bool(let allowed):
            if !allowed { fail("no value is allowed here (the schema is false)", collect: collect) }
            return allowed
        case .object(let object): members = object
        default: return true  // Refused when the schema was read.
        }
        var valid = true
        for member in members {
            if !valid, !collect || isFull { return false }
            let ok = try keyword(member.key, member.value, of: members, value, depth: depth + 1, collect: collect)
            valid = valid && ok
        }
        return valid
    }

    /// Whether `value` passes one keyword of `schema`.
    private mutating func keyword(
        _ key: String, _ operand: JSONValue, of schema: JSONObject, _ value: JSONValue, depth: Int, collect: Bool
    ) throws(Stopped) -> Bool {
        switch key {
        case "type":
            switch operand {
            case .string(let name):
                if Self.has(value, type: name) { return true }
                fail("expected \(name), got \(Self.typeName(of: value))", collect: collect)
            case .array(let list):
                if list.contains(where: {
                    if case .string(let name) = $0 { Self.has(value, type: name) } else { false }
                }) {
                    return true
                }
                let names = list.compactMap { if case .string(let name) = $0 { name } else { nil } }
                let expected = names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
                fail("expected \(expected), got \(Self.typeName(of: value))", collect: collect)
            default:
                return true
            }
            return false
        case "enum":
            guard case .array(let allowed) = operand else { return true }
            try tick(allowed.count)
            if allowed.contains(where: { AssertionEvaluator.equal($0, value, byCodePoints: true) }) { return true }
            fail("expected one of \(Self.text(operand)) (enum), got \(Self.text(value))", collect: collect)
            return false
        case "const":
            if AssertionEvaluator.equal(operand, value, byCodePoints: true) { return true }
            fail("expected \(Self.text(operand)) (const), got \(Self.text(value))", collect: collect)
            return false
        case "$ref":
            guard case .string(let reference) = operand, let target = self.schema.targets[reference] else {
                return true
            }
            return try check(target, value, depth: depth, collect: collect)
        case "allOf":
            guard case .array(let schemas) = operand else { return true }
            var valid = true
            for subschema in schemas {
                if !valid, !collect || isFull { return false }
                valid = try check(subschema, value, depth: depth, collect: collect) && valid
            }
            return valid
        case "anyOf":
            guard case .array(let schemas) = operand else { return true }
            for subschema in schemas where try check(subschema, value, depth: depth, collect: false) { return true }
            guard collect, !isFull else { return false }
            let why = try whyNot(schemas, value, depth: depth)
            fail("matches none of the \(schemas.count) schemas of anyOf\(why)", collect: collect)
            return false
        case "oneOf":
            guard case .array(let schemas) = operand else { return true }
            var matched: [Int] = []
            for (index, subschema) in schemas.enumerated()
            where try check(subschema, value, depth: depth, collect: false) {
                matched.append(index)
                if matched.count == 2 { break }
            }
            if matched.count == 1 { return true }
            guard collect, !isFull else { return false }
            let why = matched.isEmpty ? try whyNot(schemas, value, depth: depth) : ""
            fail(
                matched.isEmpty
                    ? "matches none of the \(schemas.count) schemas of oneOf\(why)"
                    : "matches more than one schema of oneOf (/oneOf/\(matched[0]) and /oneOf/\(matched[1])), expected exactly one",
                collect: collect)
            return false
        case "not":
            guard try check(operand, value, depth: depth, collect: false) else { return true }
            fail("matches the schema of not", collect: collect)
            return false
        case "if":
            if try check(operand, value, depth: depth, collect: false) {
                guard let then = schema["then"] else { return true }
                return try check(then, value, depth: depth, collect: collect)
            }
            guard let otherwise = schema["else"] else { return true }
            return try check(otherwise, value, depth: depth, collect: collect)
        default:
            break
        }
        switch value {
        case .integer, .number: return try numberKeyword(key, operand, value, collect: collect)
        case .string(let text): return try stringKeyword(key, operand, text, collect: collect)
        case .array(let elements):
            return try arrayKeyword(key, operand, of: schema, elements, depth: depth, collect: collect)
        case .object(let members):
            return try objectKeyword(key, operand, of: schema, members, depth: depth, collect: collect)
        case .null, .bool: return true
        }
    }

    /// Why `value` matches none of `schemas`: the first failure of each (at most 3), as
    /// ` (0: expected string, got integer; 1: /id: …)`, a pointer only where it is below the
    /// value. Evaluated again, listing, only once the value failed them all.
    private mutating func whyNot(_ schemas: JSONArray, _ value: JSONValue, depth: Int) throws(Stopped) -> String {
        let here = JSONSchema.pointer(path)
        var reasons: [String] = []
        for (index, subschema) in schemas.prefix(3).enumerated() {
            let kept = failures
            failures = []
            _ = try check(subschema, value, depth: depth, collect: true)
            if let first = failures.first {
                let pointer = first.pointer == MessageValue.shortened(here) ? "" : "\(first.pointer): "
                reasons.append("\(index): \(pointer)\(first.message)")
            }
            failures = kept
        }
        let more = schemas.count > 3 ? "; …" : ""
        return reasons.isEmpty ? "" : " (\(reasons.joined(separator: "; "))\(more))"
    }

    /// Checks `value` at `token` below the current value.
    mutating func check(
        _ schema: JSONValue, _ value: JSONValue, at token: String, depth: Int, collect: Bool
    ) throws(Stopped) -> Bool {
        path.append(token)
        defer { path.removeLast() }
        return try check(schema, value, depth: depth, collect: collect)
    }

    // MARK: - Values

    /// `value` as a message quotes it.
    static func text(_ value: JSONValue) -> String {
        AssertionEvaluator.text(value)
    }

    /// The JSON Schema type of `value`: `integer` for a number with no fraction (`1.0` too).
    static func typeName(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .number(let number): isWhole(number) ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    static func has(_ value: JSONValue, type: String) -> Bool {
        let actual = typeName(of: value)
        return actual == type || (type == "number" && actual == "integer")
    }

    /// Whether `number` has no fractional part (`1.0`, `1e3`).
    static func isWhole(_ number: JSONNumber) -> Bool {
        if number.isInteger { return true }
        let double = number.doubleValue
        return double.isFinite && double.rounded() == double
    }
}
