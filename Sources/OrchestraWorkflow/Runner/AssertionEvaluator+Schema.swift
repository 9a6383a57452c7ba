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

extension Assertion.Check {
    /// Whether the check may work on the response for up to the time bound of its checks
    /// (``BoundedRegex``): a `matches:` check, or a `schema:` check (its patterns, and an
    /// evaluation whose work the schema multiplies).
    var usesRegex: Bool {
        switch self {
        case .matches, .schema: true
        default: false
        }
    }
}
