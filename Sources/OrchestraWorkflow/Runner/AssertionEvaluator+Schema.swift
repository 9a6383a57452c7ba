import Foundation

extension AssertionEvaluator {
    /// The result of a `schema:` check: passed, or the first failures (each with the JSON
    /// pointer of the value and the keyword) as its reason. The check works within `reader`'s
    /// time bound for the response's checks; one that gives up, or is cancelled, fails
    /// saying so (the caller turns `cancelled` into the step's cancellation).
    func result(
        of schema: JSONSchema, on actual: Actual, subject: Assertion.Subject, reader: ResponseReader
    ) -> AssertionResult {
        var result = AssertionResult(
            subject: subject.description, operatorName: "schema", expected: schema.name, actual: nil, passed: false)
        guard case .value(let value) = actual else {
            if case .missing(let reason) = actual { result.reason = reason }
            return result
        }
        result.actual = Self.text(value)
        let validator = JSONSchemaValidator(schema: schema, deadline: reader.regexDeadline, limit: reader.regexLimit)
        do {
            let failures = try validator.validate(value)
            result.passed = failures.isEmpty
            result.failures = failures.prefix(JSONSchema.maximumFailures).map(\.description)
            if failures.count > JSONSchema.maximumFailures { result.failures.append("… and more") }
            if !failures.isEmpty { result.reason = result.failures.joined(separator: "; ") }
        } catch {
            result.reason = error.isCancellation ? "cancelled" : error.description
        }
        return result
    }
}

extension AssertionEvaluator {
    /// The result of `schema: "{{STEP.CAPTURE}}"`: the captured value (JSON, or text that is
    /// JSON) is read as a schema, checked as a file's would be, then evaluated; a value that is
    /// not a schema fails the check saying why.
    func result(
        ofCaptured template: Template, on actual: Actual, subject: Assertion.Subject, reader: ResponseReader
    ) -> AssertionResult {
        var value: JSONValue
        do {
            value = try JSONTemplate.string(template).render(with: values)
            if case .string(let text) = value { value = try JSONValue(parsing: Data(text.utf8)) }
        } catch {
            return AssertionResult(
                subject: subject.description, operatorName: "schema", expected: template.source, actual: nil,
                passed: false, reason: "\(template.source) is not a JSON Schema: \(error)")
        }
        do {
            return result(
                of: try JSONSchema(value, name: template.source), on: actual, subject: subject, reader: reader)
        } catch {
            return AssertionResult(
                subject: subject.description, operatorName: "schema", expected: template.source, actual: nil,
                passed: false, reason: "\(template.source) is not a JSON Schema this check can use: \(error)")
        }
    }
}

extension Assertion.Check {
    /// Whether the check may work on the response for up to the time bound of its checks
    /// (``BoundedRegex``): a `matches:` check, or a `schema:` check (its patterns, and an
    /// evaluation whose work the schema multiplies).
    var usesRegex: Bool {
        switch self {
        case .matches, .schema, .capturedSchema: true
        default: false
        }
    }
}
