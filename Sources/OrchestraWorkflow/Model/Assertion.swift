import HTTPTypes

/// One entry of a step's `assert:` list: a subject of the response and the checks it must pass.
///
/// ```yaml
/// assert:
///   - $.user.name: "Ada"                    # equality with a JSON value
///   - $.price: { ">": 10, "<=": 100 }       # two checks on one subject
///   - header Content-Type: { contains: json }
///   - duration: { "<": 500ms }
///   - $: { schema: user.schema.json }       # a JSON Schema: a file, inline, or "{{spec.user}}"
/// ```
///
/// Every check of every assertion is evaluated, so a report lists all that failed, not the
/// first. Values may hold templates, rendered with the step's values when the response is
/// checked (in a `for_each` step, `{{item}}` is the element).
package struct Assertion: Sendable, Hashable {
    /// What of the response is checked.
    package enum Subject: Sendable, Hashable, CustomStringConvertible {
        /// A value in the JSON body: `$.user.name`.
        case path(CapturePath)
        /// A response header, any case; several fields of one name are joined with `, `.
        case header(HTTPField.Name)
        /// The raw body, as UTF-8 text.
        case body
        /// The response's status.
        case status
        /// The time of the request's last attempt, from sending it to its response.
        case duration

        package var description: String {
            switch self {
            case .path(let path): path.source
            case .header(let name): "header \(name.rawName)"
            case .body: "body"
            case .status: "status"
            case .duration: "duration"
            }
        }
    }

    /// A comparison operator, as written.
    package enum Comparison: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="

        /// Whether `lhs` compared with `rhs` holds.
        package func holds<T: Comparable>(_ lhs: T, _ rhs: T) -> Bool {
            switch self {
            case .equal: lhs == rhs
            case .notEqual: lhs != rhs
            case .less: lhs < rhs
            case .lessOrEqual: lhs <= rhs
            case .greater: lhs > rhs
            case .greaterOrEqual: lhs >= rhs
            }
        }
    }

    /// The kinds of JSON value `type:` names.
    package enum ValueType: String, Sendable, Hashable, CaseIterable {
        case null, boolean, integer, number, string, list, object
    }

    /// One check of a subject.
    package enum Check: Sendable, Hashable {
        /// `== value` (the short form `SUBJECT: value`, or `equals:`): JSON equality, numbers
        /// by value (`1` equals `1.0`).
        case equals(JSONTemplate)
        /// `!= value`.
        case notEquals(JSONTemplate)
        /// `<`, `<=`, `>`, `>=` a number.
        case compare(Comparison, JSONTemplate)
        /// The `duration` subject compared with a duration.
        case duration(Comparison, Duration)
        /// The length of a list, an object (its members) or a string (its characters).
        case count(Comparison, Int)
        /// A regular expression that must match somewhere in a string.
        case matches(String)
        /// A list holds an element equal to the value; a string holds the text; an object has
        /// the key.
        case contains(JSONTemplate)
        /// The subject is there (`true`) or is not (`false`).
        case exists(Bool)
        /// The subject is of this kind (`number` includes integers).
        case type(ValueType)
        /// The subject equals one of the values.
        case oneOf([JSONTemplate])
        /// The subject matches a JSON Schema (`schema: user.schema.json`, or inline).
        case schema(JSONSchema)
        /// The subject matches the JSON Schema a capture holds (`schema: "{{spec.user}}"`): read
        /// and checked when the response is.
        case capturedSchema(Template)

        /// The check's operator as written in the file: `==`, `count`, `matches`…
        package var operatorName: String {
            switch self {
            case .equals: "=="
            case .notEquals: "!="
            case .compare(let comparison, _), .duration(let comparison, _): comparison.rawValue
            case .count: "count"
            case .matches: "matches"
            case .contains: "contains"
            case .exists: "exists"
            case .type: "type"
            case .oneOf: "one_of"
            case .schema, .capturedSchema: "schema"
            }
        }

        /// Every template the check holds.
        package var templates: [Template] {
            switch self {
            case .equals(let value), .notEquals(let value), .compare(_, let value), .contains(let value):
                value.templates
            case .oneOf(let values): values.flatMap(\.templates)
            case .capturedSchema(let template): [template]
            case .duration, .count, .matches, .exists, .type, .schema: []
            }
        }
    }

    /// The operator names a mapping may use, in the order messages list them.
    package static let operatorNames =
        Comparison.allCases.map(\.rawValue) + [
            "equals", "count", "matches", "contains", "exists", "type", "one_of", "schema",
        ]

    package var subject: Subject
    package var checks: [Check]
    /// Where the assertion is, for messages.
    package var location: SourceLocation?

    package init(subject: Subject, checks: [Check], location: SourceLocation? = nil) {
        self.subject = subject
        self.checks = checks
        self.location = location
    }

    /// Every template of the assertion's checks.
    package var templates: [Template] { checks.flatMap(\.templates) }
}

/// How one check of an assertion went.
package struct AssertionResult: Sendable, Hashable, CustomStringConvertible {
    /// The subject as written: `$.user.name`, `header Content-Type`.
    package var subject: String
    /// The operator: `==`, `<`, `count`, `matches`…
    package var operatorName: String
    /// What was expected, as text (`"Ada"`, `3`, `500ms`).
    package var expected: String
    /// What the response had, as text; `nil` when the subject was not there.
    package var actual: String?
    package var passed: Bool
    /// Why the check could not be made, when it could not (a subject that is not JSON, a
    /// value that is not a number).
    package var reason: String?
    /// What a `schema:` check found wrong, each value by its JSON pointer (`/orders/0/id:
    /// expected integer, got string`), at most ``JSONSchema/maximumFailures`` then `… and
    /// more` if there were more; ``reason`` lists them too, on one line.
    package var failures: [String] = []

    package init(
        subject: String, operatorName: String, expected: String, actual: String?, passed: Bool, reason: String? = nil
    ) {
        self.subject = subject
        self.operatorName = operatorName
        self.expected = expected
        self.actual = actual
        self.passed = passed
        self.reason = reason
    }

    /// `$.user.name == "Ada": got "Bob"`, `$.items count 3: got 2`,
    /// `$.token exists: not found in the response`.
    package var description: String {
        let check = "\(subject) \(operatorName) \(expected)"
        if passed { return check }
        if let reason { return "\(check): \(reason)" }
        return "\(check): got \(actual ?? "nothing")"
    }
}
