import Foundation
import HTTPTypes

/// Checks a step's assertions against its response: every check of every assertion, so a
/// report lists all that failed.
struct AssertionEvaluator {
    /// The subject's value, or why it is not there.
    enum Actual {
        case value(JSONValue)
        case missing(String)
    }

    /// The values the checks' templates are rendered with.
    let values: TemplateValues
    /// The time of the request's last attempt, for `duration`.
    let duration: Duration?

    /// The result of every check of `assertions`, in order. A `matches:` check works within
    /// `reader`'s time bound for regular expressions; one that gives up fails, saying so.
    /// Cancellation stops a `matches:` check (its result then says it was not made); the
    /// caller checks for it.
    func evaluate(_ assertions: [Assertion], reader: inout ResponseReader) -> [AssertionResult] {
        var results: [AssertionResult] = []
        for assertion in assertions {
            let subject = assertion.subject.description
            if assertion.subject == .duration {
                for check in assertion.checks {
                    guard case .duration(let comparison, let limit) = check else { continue }
                    let expected = StepErrors.format(limit)
                    guard let duration else {
                        results.append(
                            AssertionResult(
                                subject: subject, operatorName: comparison.rawValue, expected: expected, actual: nil,
                                passed: false, reason: "the request was not timed"))
                        continue
                    }
                    results.append(
                        AssertionResult(
                            subject: subject, operatorName: comparison.rawValue, expected: expected,
                            actual: StepErrors.format(duration), passed: comparison.holds(duration, limit)))
                }
                continue
            }
            let actual = value(of: assertion.subject, in: &reader)
            for check in assertion.checks {
                results.append(evaluate(check, on: actual, subject: assertion.subject, reader: reader))
            }
        }
        return results
    }

    private func value(of subject: Assertion.Subject, in reader: inout ResponseReader) -> Actual {
        switch subject {
        case .path(let path):
            guard let document = reader.document() else {
                return .missing("the response\(reader.typeNote) \(reader.notJSON): \(reader.snippet)")
            }
            guard let value = path.evaluate(in: document) else { return .missing("not found in the response") }
            return .value(value)
        case .header(let name):
            let fields = reader.result.response.headerFields[values: name]
            guard !fields.isEmpty else { return .missing("the response has no '\(short: name.rawName)' header") }
            return .value(.string(fields.joined(separator: ", ")))
        case .body:
            return .value(.string(reader.bodyText.text))
        case .status:
            return .value(.integer(reader.result.status.code))
        case .duration:
            return .missing("the request was not timed")
        }
    }

    private func evaluate(
        _ check: Assertion.Check, on actual: Actual, subject: Assertion.Subject, reader: ResponseReader
    ) -> AssertionResult {
        if case .schema(let schema) = check { return result(of: schema, on: actual, subject: subject, reader: reader) }
        if case .capturedSchema(let template) = check {
            return result(ofCaptured: template, on: actual, subject: subject, reader: reader)
        }
        var result = AssertionResult(
            subject: subject.description, operatorName: check.operatorName, expected: "", actual: nil, passed: false)
        if case .exists(let expected) = check {
            result.expected = "\(expected)"
            if case .value(let value) = actual {
                result.actual = Self.text(value)
                result.passed = expected
            } else {
                result.passed = !expected
                if expected, case .missing(let reason) = actual { result.reason = reason }
            }
            return result
        }
        do {
            result.expected = try expectedText(check)
            guard case .value(let value) = actual else {
                if case .missing(let reason) = actual { result.reason = reason }
                return result
            }
            result.actual = Self.text(value)
            if case .count = check, let length = Self.length(of: value) { result.actual = "\(length)" }
            result.passed = try passes(check, value, subject: subject, reader: reader)
            // The body was read as UTF-8 for want of a charset that is decoded: say so.
            if !result.passed, subject == .body, let note = reader.charsetNote {
                result.reason = "got \(result.actual ?? "nothing") (\(note))"
            }
        } catch {
            result.reason = error.reason
        }
        return result
    }

    /// Why a check could not be made.
    private struct Unchecked: Error {
        var reason: String
    }

    private func expectedText(_ check: Assertion.Check) throws(Unchecked) -> String {
        switch check {
        case .equals(let value), .notEquals(let value), .compare(_, let value), .contains(let value):
            return Self.text(try render(value))
        case .oneOf(let values):
            var rendered: [JSONValue] = []
            for value in values { rendered.append(try render(value)) }
            return Self.text(.array(rendered))
        case .count(let comparison, let count):
            return comparison == .equal ? "\(count)" : "\(comparison.rawValue) \(count)"
        case .matches(let pattern): return Self.text(.string(pattern))
        case .type(let type): return type.rawValue
        case .exists(let expected): return "\(expected)"
        case .duration(_, let limit): return StepErrors.format(limit)
        case .schema(let schema): return schema.name
        case .capturedSchema(let template): return template.source
        }
    }

    private func passes(
        _ check: Assertion.Check, _ value: JSONValue, subject: Assertion.Subject, reader: ResponseReader
    ) throws(Unchecked)
        -> Bool
    {
        switch check {
        case .equals(let expected):
            return Self.equal(value, try render(expected))
        case .notEquals(let expected):
            return !Self.equal(value, try render(expected))
        case .compare(let comparison, let expected):
            let rendered = try render(expected)
            guard let bound = Self.number(rendered, fromText: true) else {
                throw Unchecked(reason: "\(Self.text(rendered)) is not a number")
            }
            guard let number = Self.number(value, fromText: subject.isText) else {
                throw Unchecked(reason: "got \(Self.text(value)), not a number")
            }
            return number.compared(to: bound, by: comparison)
        case .count(let comparison, let count):
            guard let length = Self.length(of: value) else {
                throw Unchecked(reason: "got \(Self.text(value)), which has no length (a list, an object or a string)")
            }
            return comparison.holds(length, count)
        case .matches(let pattern):
            guard case .string(let text) = value else {
                throw Unchecked(reason: "got \(Self.text(value)), not text")
            }
            let regex: BoundedRegex
            do {
                regex = try BoundedRegex(pattern)
            } catch {
                throw Unchecked(reason: "'\(short: pattern)' is not a regular expression: \(error)")
            }
            do {
                return try regex.firstMatch(in: text, deadline: reader.regexDeadline, limit: reader.regexLimit) != nil
            } catch {
                // Gave up (its message names the expression and the bound), or cancelled.
                throw Unchecked(reason: error is CancellationError ? "cancelled" : "\(error)")
            }
        case .contains(let expected):
            let element = try render(expected)
            switch value {
            case .array(let elements): return elements.contains { Self.equal($0, element) }
            case .string(let text): return text.contains(element.interpolated)
            case .object(let members):
                guard case .string(let key) = element else {
                    throw Unchecked(reason: "an object contains keys, and \(Self.text(element)) is not text")
                }
                return members.contains { $0.key == key }
            default:
                throw Unchecked(reason: "got \(Self.text(value)); contains needs a list, a string or an object")
            }
        case .type(let type):
            return Self.type(of: value, is: type)
        case .oneOf(let candidates):
            for candidate in candidates where Self.equal(value, try render(candidate)) { return true }
            return false
        case .exists, .duration, .schema, .capturedSchema:
            return false  // evaluated before
        }
    }

    /// `template` rendered. A value that is exactly one variable, environment variable or data
    /// column (`"{{vars.id}}"`, `"{{data.id}}"`), always text, is a number when its text is
    /// one, so `--var id=7` or a CSV's `7` compares equal to `7`.
    private func render(_ template: JSONTemplate) throws(Unchecked) -> JSONValue {
        let value: JSONValue
        do {
            value = try template.render(with: values)
        } catch {
            throw Unchecked(reason: "\(error)")
        }
        if case .string(let source) = template, let reference = source.soleReference,
            reference.isVariable || reference.isEnvironment || reference.isData, reference.filters.isEmpty,
            case .string(let text) = value,
            let number = JSONValue(numberText: text)
        {
            return number
        }
        return value
    }

    /// The length of a list, an object (its members) or a string (its characters).
    static func length(of value: JSONValue) -> Int? {
        switch value {
        case .array(let elements): elements.count
        case .object(let members): members.count
        case .string(let text): text.count
        default: nil
        }
    }

    /// `value` as a message quotes it: JSON text, shortened.
    static func text(_ value: JSONValue) -> String {
        let (text, isComplete) = value.textPrefix(maximumBytes: quotedTextBytes)
        return isComplete ? MessageValue.shortened(text) : MessageValue.shortened(start: text)
    }

    /// How much of a value's JSON text is written to quote its start in a report: far more
    /// than the 200 characters quoted, and than any secret masked across the cut.
    static let quotedTextBytes = 64 * 1024

    // MARK: - Values

    /// A number, exact when both sides are whole numbers `Int` holds.
    enum Number {
        case integer(Int)
        case double(Double)

        func compared(to other: Number, by comparison: Assertion.Comparison) -> Bool {
            if case .integer(let a) = self, case .integer(let b) = other { return comparison.holds(a, b) }
            return comparison.holds(doubleValue, other.doubleValue)
        }

        var doubleValue: Double {
            switch self {
            case .integer(let value): Double(value)
            case .double(let value): value
            }
        }
    }

    /// `value` as a number: a JSON number, or (with `fromText`) text that is one (a
    /// template's value, a header).
    static func number(_ value: JSONValue, fromText: Bool) -> Number? {
        switch value {
        case .integer(let value): return .integer(value)
        case .number(let number): return number.intValue.map(Number.integer) ?? .double(number.doubleValue)
        case .string(let text) where fromText:
            let text = text.trimmingCharacters(in: .whitespaces)
            guard let number = JSONValue(numberText: text) else { return nil }
            return Self.number(number, fromText: false)
        default: return nil
        }
    }

    /// JSON equality, numbers by value (`1` equals `1.0`), objects by their members whatever
    /// their order. Strings are equal when Swift says so (canonically equivalent: `é` written
    /// as one code point or two), or with `byCodePoints` only when their code points are, as
    /// JSON Schema compares them.
    static func equal(_ a: JSONValue, _ b: JSONValue, byCodePoints: Bool = false) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(let x), .string(let y)):
            return byCodePoints ? x.unicodeScalars.elementsEqual(y.unicodeScalars) : x == y
        case (.integer, _), (.number, _):
            guard let x = number(a, fromText: false), let y = number(b, fromText: false) else { return false }
            return x.compared(to: y, by: .equal)
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1, byCodePoints: byCodePoints) }
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            return x.allSatisfy { member in
                guard let other = y.first(where: { $0.key == member.key }) else { return false }
                return equal(member.value, other.value, byCodePoints: byCodePoints)
            }
        default: return false
        }
    }

    static func type(of value: JSONValue, is type: Assertion.ValueType) -> Bool {
        switch (value, type) {
        case (.null, .null), (.bool, .boolean), (.string, .string), (.array, .list), (.object, .object): true
        case (.integer, .integer), (.integer, .number), (.number, .number): true
        case (.number(let number), .integer): number.isInteger
        default: false
        }
    }
}

extension Assertion.Subject {
    /// Whether the subject is text (a header, the body), whose numbers are read from it.
    var isText: Bool {
        switch self {
        case .header, .body: true
        case .path, .status, .duration: false
        }
    }
}
