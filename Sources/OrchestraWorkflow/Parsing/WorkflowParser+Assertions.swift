import HTTPTypes
import Yams

extension WorkflowParser {
    /// `assert:`: a list of `SUBJECT: value` or `SUBJECT: { OPERATOR: value, … }` entries (a
    /// single mapping of them is read the same). Subjects, operators, their values and regular
    /// expressions are checked here, so a mistake is reported before anything is sent.
    mutating func assertions(_ node: Node, step: String) -> [Assertion] {
        var assertions: [Assertion] = []
        for (position, element) in reader.list(node).enumerated() {
            let field = "assert[\(position)]"
            guard let entries = reader.freeEntries(element, step: step, field: field) else { continue }
            if entries.isEmpty {
                reader.fail(
                    .invalidValue, "an empty assertion: write SUBJECT: value, as in $.id: 42", at: element, step: step,
                    field: field)
            }
            for (key, keyNode, value) in entries {
                if let assertion = assertion(key, keyNode: keyNode, value: value, step: step, field: field) {
                    assertions.append(assertion)
                }
            }
        }
        return assertions
    }

    private mutating func assertion(
        _ key: String, keyNode: Node, value: Node, step: String, field: String
    )
        -> Assertion?
    {
        guard let subject = assertionSubject(key, at: keyNode, step: step, field: field) else { return nil }
        let field = "\(field).\(key)"
        var checks: [Assertion.Check] = []
        if case .mapping = value, NodeReader.templateHint(value).isEmpty {
            guard
                let entries = reader.entries(
                    value, allowed: Assertion.operatorNames, step: step, field: field,
                    hint: "; to compare with an object, write { equals: { … } }")
            else { return nil }
            if entries.isEmpty {
                reader.fail(
                    .invalidValue, "no check: give an operator, as in { \">\": 0 }", at: value, step: step,
                    field: field)
            }
            for (name, operand) in entries {
                guard let check = check(name, operand, subject: subject, step: step, field: "\(field).\(name)") else {
                    continue
                }
                checks.append(check)
            }
        } else {
            guard let check = check("equals", value, subject: subject, step: step, field: field) else { return nil }
            checks.append(check)
        }
        guard !checks.isEmpty else { return nil }
        return Assertion(subject: subject, checks: checks, location: NodeReader.location(keyNode))
    }

    /// `$.path`, `header NAME`, `body`, `status` or `duration`.
    private mutating func assertionSubject(
        _ key: String, at node: Node, step: String, field: String
    )
        -> Assertion.Subject?
    {
        if key.hasPrefix("$") {
            do {
                return .path(try CapturePath(parsing: key))
            } catch {
                reader.fail(.invalidCapturePath, error.message, at: node, step: step, field: field)
                return nil
            }
        }
        let words = key.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        if words.first?.lowercased() == "header" {
            guard words.count == 2, let name = HTTPField.Name(words[1]) else {
                reader.fail(
                    .invalidValue,
                    "'\(short: key)' does not name a header: write header NAME, as in header Content-Type", at: node,
                    step: step, field: field)
                return nil
            }
            return .header(name)
        }
        switch key {
        case "body": return .body
        case "status": return .status
        case "duration": return .duration
        default:
            reader.fail(
                .invalidValue,
                "unknown subject '\(short: key)': an assertion checks $.path (the JSON body), header NAME, body, status or duration",
                at: node, step: step, field: field)
            return nil
        }
    }

    /// One `OPERATOR: value` of an assertion.
    private mutating func check(
        _ name: String, _ node: Node, subject: Assertion.Subject, step: String, field: String
    ) -> Assertion.Check? {
        if subject == .duration {
            guard let comparison = Assertion.Comparison(rawValue: name) else {
                let operators = Assertion.Comparison.allCases.map(\.rawValue).joined(separator: " ")
                reader.fail(
                    .invalidValue,
                    "duration is compared with a duration, as in { \"<\": 500ms }; its operators are \(operators), not '\(name == "equals" ? "a value" : name)'",
                    at: node, step: step, field: field)
                return nil
            }
            return reader.duration(
                node, step: step, field: field, allowZero: true, maximum: WorkflowStep.maximumTimeout
            )
            .map { .duration(comparison, $0) }
        }
        switch name {
        case "equals", "==":
            return value(node, step: step, field: field).map(Assertion.Check.equals)
        case "!=":
            return value(node, step: step, field: field).map(Assertion.Check.notEquals)
        case "<", "<=", ">", ">=":
            guard let number = number(node, step: step, field: field) else { return nil }
            return .compare(Assertion.Comparison(rawValue: name)!, number)
        case "count":
            return count(node, step: step, field: field)
        case "matches":
            guard let pattern = reader.string(node, step: step, field: field) else { return nil }
            do {
                _ = try BoundedRegex(pattern)
            } catch {
                reader.fail(
                    .invalidValue, "'\(short: pattern)' is not a regular expression: \(error)", at: node, step: step,
                    field: field)
                return nil
            }
            return .matches(pattern)
        case "contains":
            return value(node, step: step, field: field).map(Assertion.Check.contains)
        case "exists":
            return reader.bool(node, step: step, field: field).map(Assertion.Check.exists)
        case "schema":
            guard case .path = subject else {
                reader.fail(
                    .invalidValue,
                    "a schema checks the JSON body: write it on $ or a $.path, as in $: { schema: user.schema.json }",
                    at: node, step: step, field: field)
                return nil
            }
            return schema(node, step: step, field: field)
        case "type":
            let names = Assertion.ValueType.allCases.map(\.rawValue)
            guard let text = reader.string(node, step: step, field: field) else { return nil }
            guard let type = Assertion.ValueType(rawValue: text) else {
                let suggestion = NodeReader.closest(to: text, in: names).map { "did you mean '\($0)'? " } ?? ""
                reader.fail(
                    .invalidValue,
                    "unknown type '\(short: text)'; \(suggestion)the types are \(names.joined(separator: ", "))",
                    at: node, step: step, field: field)
                return nil
            }
            return .type(type)
        default:  // one_of
            guard case .sequence(let sequence) = node, !sequence.isEmpty else {
                reader.fail(
                    .invalidValue,
                    "must be a list of values, as in [active, pending], got \(NodeReader.describe(node))",
                    at: node, step: step, field: field)
                return nil
            }
            var values: [JSONTemplate] = []
            for (index, element) in sequence.enumerated() {
                guard let value = value(element, step: step, field: "\(field)[\(index)]") else { return nil }
                values.append(value)
            }
            return .oneOf(values)
        }
    }

    /// A value compared with the subject: any JSON, strings may hold templates.
    private mutating func value(_ node: Node, step: String, field: String) -> JSONTemplate? {
        json(node, step: step, field: field, variablesOnly: false)
    }

    /// A number, or a template that gives one when the response is checked.
    private mutating func number(_ node: Node, step: String, field: String) -> JSONTemplate? {
        guard let value = value(node, step: step, field: field) else { return nil }
        switch value {
        case .integer, .number:
            return value
        case .string(let template) where !template.references.isEmpty:
            return value
        default:
            reader.fail(
                .invalidValue, "must be a number (or a template that gives one), got \(NodeReader.describe(node))",
                at: node, step: step, field: field)
            return nil
        }
    }

    /// `count: 3` or `count: { ">": 0 }` (one check per comparison).
    private mutating func count(_ node: Node, step: String, field: String) -> Assertion.Check? {
        let what = "a length"
        guard case .mapping = node else {
            return reader.integer(node, minimum: 0, step: step, field: field, what: what).map { .count(.equal, $0) }
        }
        let operators = Assertion.Comparison.allCases.map(\.rawValue)
        guard let entries = reader.entries(node, allowed: operators, step: step, field: field) else { return nil }
        guard entries.count == 1, let entry = entries.first else {
            reader.fail(
                .invalidValue, "count takes a length or one comparison, as in { \">\": 0 }", at: node, step: step,
                field: field)
            return nil
        }
        return reader.integer(entry.node, minimum: 0, step: step, field: "\(field).\(entry.key)", what: what).map {
            .count(Assertion.Comparison(rawValue: entry.key)!, $0)
        }
    }
}
