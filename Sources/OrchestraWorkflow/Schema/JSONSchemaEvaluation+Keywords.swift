import Foundation

/// The keywords that apply to one type of value: numbers, strings, arrays, objects. A keyword
/// of another type's, or one that is not evaluated, passes.
extension JSONSchemaEvaluation {
    mutating func numberKeyword(
        _ key: String, _ operand: JSONValue, _ value: JSONValue, collect: Bool
    ) throws(Stopped) -> Bool {
        guard let number = AssertionEvaluator.number(value, fromText: false),
            let bound = AssertionEvaluator.number(operand, fromText: false)
        else { return true }
        let comparison: Assertion.Comparison
        let words: String
        switch key {
        case "minimum": (comparison, words) = (.greaterOrEqual, "at least")
        case "maximum": (comparison, words) = (.lessOrEqual, "at most")
        case "exclusiveMinimum": (comparison, words) = (.greater, "more than")
        case "exclusiveMaximum": (comparison, words) = (.less, "less than")
        case "multipleOf":
            if Self.isMultiple(value, of: operand) { return true }
            fail("expected a multiple of \(Self.text(operand)) (multipleOf), got \(Self.text(value))", collect: collect)
            return false
        default: return true
        }
        if number.compared(to: bound, by: comparison) { return true }
        fail("expected \(words) \(Self.text(operand)) (\(key)), got \(Self.text(value))", collect: collect)
        return false
    }

    /// `1 element`, `2 elements`.
    static func counted(_ count: Int, _ one: String, _ many: String) -> String {
        "\(count) \(count == 1 ? one : many)"
    }

    /// Whether `value` is a whole multiple of `divisor`: exact in decimal for numbers written
    /// with up to 38 digits, else by `Double` (a quotient that overflows is not a multiple).
    static func isMultiple(_ value: JSONValue, of divisor: JSONValue) -> Bool {
        if case .integer(let a) = value, case .integer(let b) = divisor, b != 0 { return a % b == 0 }
        let a = numberText(value)
        let b = numberText(divisor)
        if let x = Decimal(string: a, locale: Locale(identifier: "en_US_POSIX")),
            let y = Decimal(string: b, locale: Locale(identifier: "en_US_POSIX")), !x.isNaN, !y.isNaN, !y.isZero,
            let dx = Double(a), let dy = Double(b), abs(dx) < 1e100, abs(dy) < 1e100, abs(dy) > 1e-100
        {
            var quotient = x / y
            var whole = Decimal()
            NSDecimalRound(&whole, &quotient, 0, .plain)
            return whole == quotient
        }
        guard let x = Double(a), let y = Double(b), y != 0 else { return false }
        let quotient = x / y
        return quotient.isFinite && quotient.rounded() == quotient
    }

    private static func numberText(_ value: JSONValue) -> String {
        switch value {
        case .integer(let integer): String(integer)
        case .number(let number): number.text
        default: ""
        }
    }

    mutating func stringKeyword(
        _ key: String, _ operand: JSONValue, _ text: String, collect: Bool
    ) throws(Stopped) -> Bool {
        switch key {
        case "minLength", "maxLength":
            guard let bound = JSONSchemaChecker.count(operand) else { return true }
            try tick(text.utf8.count / 1024)
            // Lengths count Unicode code points, as the specification says.
            let length = text.unicodeScalars.count
            let isMinimum = key == "minLength"
            if isMinimum ? length >= bound : length <= bound { return true }
            fail(
                "expected \(isMinimum ? "at least" : "at most") \(Self.counted(bound, "character", "characters")) (\(key)), got \(length)",
                collect: collect)
            return false
        case "pattern":
            guard case .string(let pattern) = operand else { return true }
            if try matches(text, pattern) { return true }
            fail("\(Self.text(.string(text))) does not match the pattern \(Self.text(operand))", collect: collect)
            return false
        default:
            return true
        }
    }

    /// Whether `pattern` matches somewhere in `text`, within the evaluation's deadline.
    mutating func matches(_ text: String, _ pattern: String) throws(Stopped) -> Bool {
        guard let regex = schema.regexes[pattern] else { return true }
        try tick()
        do {
            return try regex.firstMatch(in: text, deadline: deadline, limit: limit) != nil
        } catch is CancellationError {
            throw Stopped(description: "cancelled", isCancellation: true)
        } catch {
            throw Stopped(description: "\(error)")
        }
    }

    mutating func arrayKeyword(
        _ key: String, _ operand: JSONValue, of schema: JSONObject, _ elements: JSONArray, depth: Int, collect: Bool
    ) throws(Stopped) -> Bool {
        switch key {
        case "prefixItems", "items":
            var start = 0
            var end = elements.count
            if key == "items" {
                if case .array(let prefix) = schema["prefixItems"] { start = min(prefix.count, end) }
            } else {
                guard case .array(let prefix) = operand else { return true }
                end = min(prefix.count, end)
            }
            var valid = true
            for index in start..<end {
                if !valid, !collect || isFull { return false }
                let subschema: JSONValue
                if key == "items" {
                    subschema = operand
                } else if case .array(let prefix) = operand {
                    subschema = prefix[index]
                } else {
                    return true
                }
                valid =
                    try check(subschema, elements[index], at: String(index), depth: depth, collect: collect) && valid
            }
            return valid
        case "contains":
            let minimum = schema["minContains"].flatMap(JSONSchemaChecker.count) ?? 1
            let maximum = schema["maxContains"].flatMap(JSONSchemaChecker.count)
            var count = 0
            for (index, element) in elements.enumerated() {
                if try check(operand, element, at: String(index), depth: depth, collect: false) {
                    count += 1
                    // Enough is known once the count passes both bounds.
                    if maximum.map({ count > $0 }) ?? (count >= minimum) { break }
                }
            }
            if count >= minimum, maximum.map({ count <= $0 }) ?? true { return true }
            if count < minimum {
                fail(
                    count == 0
                        ? "no element matches the schema of contains"
                        : "\(count) element\(count == 1 ? "" : "s") match the schema of contains, expected at least \(minimum) (minContains)",
                    collect: collect)
            } else {
                fail(
                    "more than \(maximum ?? 0) elements match the schema of contains (maxContains)", collect: collect)
            }
            return false
        case "minItems", "maxItems":
            guard let bound = JSONSchemaChecker.count(operand) else { return true }
            let isMinimum = key == "minItems"
            if isMinimum ? elements.count >= bound : elements.count <= bound { return true }
            fail(
                "expected \(isMinimum ? "at least" : "at most") \(Self.counted(bound, "element", "elements")) (\(key)), got \(elements.count)",
                collect: collect)
            return false
        case "uniqueItems":
            guard case .bool(true) = operand, let (first, second) = try firstDuplicate(in: elements) else {
                return true
            }
            fail(
                "elements \(first) and \(second) are equal (uniqueItems): \(Self.text(elements[second]))",
                collect: collect)
            return false
        default:
            return true
        }
    }

    /// The indices of the first two equal elements (JSON equality: `1` equals `1.0`), if any.
    /// Elements are compared only with others of the same structural hash
    /// (``structuralHash(_:)``), so a list of distinct values is checked in linear time, arrays
    /// and objects too.
    private mutating func firstDuplicate(in elements: JSONArray) throws(Stopped) -> (Int, Int)? {
        var buckets: [Int: Int] = [:]
        var more: [Int: [Int]] = [:]
        for (index, element) in elements.enumerated() {
            // Most buckets hold one element: its index, without a list; the rare others in `more`.
            try tick()
            let bucket = Self.structuralHash(element)
            guard let first = buckets[bucket] else {
                buckets[bucket] = index
                continue
            }
            let earlier = [first] + (more[bucket] ?? [])
            try tick(earlier.count)
            if let match = earlier.first(where: {
                AssertionEvaluator.equal(elements[$0], element, byCodePoints: true)
            }) {
                return (match, index)
            }
            more[bucket, default: []].append(index)
        }
        return nil
    }

    /// A hash that is the same for two values ``AssertionEvaluator/equal(_:_:byCodePoints:)``
    /// finds equal: numbers by their value as a `Double` (`1` and `1.0`), strings by their code
    /// points, arrays in order, objects whatever the order of their members (their keys as
    /// `==` compares them). Unequal values may share one: they are then compared.
    ///
    /// *Why:* `uniqueItems` bucketed arrays and objects by their length alone, so a list of
    /// 20,000 distinct objects of one member each was compared pair by pair and gave up at
    /// the checks' time limit.
    ///
    /// Complexity: linear in the size of `value`; recursion as deep as its nesting, which the
    /// parser bounds (``JSONValue/maxDepth``), as ``AssertionEvaluator/equal(_:_:byCodePoints:)``'s.
    static func structuralHash(_ value: JSONValue) -> Int {
        var hasher = Hasher()
        switch value {
        case .null:
            hasher.combine(0)
        case .bool(let flag):
            hasher.combine(1)
            hasher.combine(flag)
        case .integer, .number:
            hasher.combine(2)
            hasher.combine(AssertionEvaluator.number(value, fromText: false)?.doubleValue ?? 0)
        case .string(let text):
            hasher.combine(3)
            for scalar in text.unicodeScalars { hasher.combine(scalar.value) }
        case .array(let list):
            hasher.combine(4)
            hasher.combine(list.count)
            for element in list { hasher.combine(structuralHash(element)) }
        case .object(let members):
            hasher.combine(5)
            hasher.combine(members.count)
            // A sum of the members' own hashes: the same in any order.
            var sum = 0
            for member in members {
                var memberHasher = Hasher()
                memberHasher.combine(member.key)
                memberHasher.combine(structuralHash(member.value))
                sum &+= memberHasher.finalize()
            }
            hasher.combine(sum)
        }
        return hasher.finalize()
    }

    mutating func objectKeyword(
        _ key: String, _ operand: JSONValue, of schema: JSONObject, _ members: JSONObject, depth: Int, collect: Bool
    ) throws(Stopped) -> Bool {
        switch key {
        case "properties":
            guard case .object(let properties) = operand else { return true }
            var valid = true
            for property in properties {
                if !valid, !collect || isFull { return false }
                try tick()
                guard let member = members[property.key] else { continue }
                valid = try check(property.value, member, at: property.key, depth: depth, collect: collect) && valid
            }
            return valid
        case "patternProperties", "additionalProperties", "propertyNames":
            return try eachMember(key, operand, of: schema, members, depth: depth, collect: collect)
        case "required":
            guard case .array(let names) = operand else { return true }
            try tick(names.count)
            for case .string(let name) in names where members[name] == nil {
                fail("required property '\(short: name)' is missing", collect: collect)
                return false
            }
            return true
        case "dependentRequired":
            guard case .object(let dependencies) = operand else { return true }
            for dependency in dependencies where members[dependency.key] != nil {
                guard case .array(let names) = dependency.value else { continue }
                try tick(names.count)
                for case .string(let name) in names where members[name] == nil {
                    fail(
                        "property '\(short: name)' is missing, required with '\(short: dependency.key)' (dependentRequired)",
                        collect: collect)
                    return false
                }
            }
            return true
        case "dependentSchemas":
            guard case .object(let dependencies) = operand else { return true }
            var valid = true
            for dependency in dependencies where members[dependency.key] != nil {
                if !valid, !collect || isFull { return false }
                valid = try check(dependency.value, .object(members), depth: depth, collect: collect) && valid
            }
            return valid
        case "minProperties", "maxProperties":
            guard let bound = JSONSchemaChecker.count(operand) else { return true }
            let isMinimum = key == "minProperties"
            if isMinimum ? members.count >= bound : members.count <= bound { return true }
            fail(
                "expected \(isMinimum ? "at least" : "at most") \(Self.counted(bound, "property", "properties")) (\(key)), got \(members.count)",
                collect: collect)
            return false
        default:
            return true
        }
    }

    /// `patternProperties`, `additionalProperties` and `propertyNames`: keywords applied to
    /// each member in turn.
    private mutating func eachMember(
        _ key: String, _ operand: JSONValue, of schema: JSONObject, _ members: JSONObject, depth: Int, collect: Bool
    ) throws(Stopped) -> Bool {
        var known: Set<String> = []
        if key == "additionalProperties", case .object(let properties) = schema["properties"] {
            known = Set(properties.map(\.key))
        }
        let patterns: JSONObject? =
            if key != "propertyNames", case .object(let patterns) = schema["patternProperties"] { patterns } else {
                nil
            }
        var valid = true
        for member in members {
            if !valid, !collect || isFull { return false }
            try tick()
            switch key {
            case "propertyNames":
                valid =
                    try check(operand, .string(member.key), at: member.key, depth: depth, collect: collect) && valid
            case "patternProperties":
                for pattern in patterns ?? [] where try matches(member.key, pattern.key) {
                    valid =
                        try check(pattern.value, member.value, at: member.key, depth: depth, collect: collect) && valid
                }
            default:  // additionalProperties
                if known.contains(member.key) { continue }
                var matched = false
                for pattern in patterns ?? [] where try matches(member.key, pattern.key) {
                    matched = true
                    break
                }
                if matched { continue }
                if case .bool(false) = operand {
                    fail("property '\(short: member.key)' is not allowed (additionalProperties)", collect: collect)
                    valid = false
                    continue
                }
                valid = try check(operand, member.value, at: member.key, depth: depth, collect: collect) && valid
            }
        }
        return valid
    }
}
