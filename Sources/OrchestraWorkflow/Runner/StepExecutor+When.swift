import Foundation
import Orchestra

extension StepExecutor {
    /// Whether `step` is skipped rather than run: because a step it depends on was skipped by
    /// its `when:`, or because its own `when:` is false. A skipped step's report says why
    /// (`skipped: when "{{login.role}} == 'admin'" was false (login.role is 'user')`), and the
    /// run counts it neither failed nor cancelled: the graph sees it succeed with no captures,
    /// and its dependents are skipped here in turn, naming it.
    ///
    /// - Returns: `true` if the step was skipped (its report is written).
    /// - Throws: ``StepFailure`` when the condition cannot be decided (a value it compares is
    ///   missing, `<` on text that is not a number).
    func skipsByCondition(_ step: WorkflowStep, inputs: NodeInputs) async throws -> Bool {
        let skipped = conditionSkips.withLock { $0 }
        // A for_each taking a pages' step's items as they arrive starts with that step, after
        // what it waits for: a skip of one of those skips both (the pages' step may not have
        // said it is skipped yet).
        let waitsFor = pageStreams.byConsumer[step.id] == nil ? [] : pageStreams.dependencies(of: step, in: workflow)
        if !skipped.isEmpty, let cause = (step.dependencies + waitsFor).first(where: skipped.contains) {
            skip(step, reason: "skipped because '\(short: cause)' was skipped", cause: cause)
            return true
        }
        guard let when = step.when else { return false }
        var values = TemplateValues(variables: workflow.variables, environment: workflow.environment)
        values.cookieJar = step.usesCookies ?? workflow.usesCookies ? cookies : nil
        values.data = row
        for dependency in step.dependencies {
            if let captures = try? inputs.value(of: dependency, as: [String: JSONValue].self) {
                values.captures[dependency] = captures
            }
        }
        let evaluator = ConditionEvaluator(values: values)
        let holds: Bool
        do {
            holds = try evaluator.evaluate(when.condition)
        } catch {
            // Reported like any failure of the step, through its report.
            _ = try await tracked(step, id: step.id, item: nil) { throw error }
            return false
        }
        guard !holds else { return false }
        skip(step, reason: "skipped: when \(when.source) was false (\(evaluator.describe(when.condition)))", cause: nil)
        return true
    }

    private func skip(_ step: WorkflowStep, reason: String, cause: String?) {
        let now = elapsed()
        conditionSkips.withLock { _ = $0.insert(step.id) }
        records.withLock {
            var report = StepReport(
                id: step.id, state: .skipped, method: step.request.method.rawValue, url: step.request.url.source,
                started: now, ended: now, error: reason, cause: cause)
            report.skippedByCondition = true
            $0[step.id] = report
        }
        // The `--state` file says so (`orchestra status`: nothing to send) for this run: the
        // next run decides again.
        recordOutcome(step, id: step.id, item: -1, captures: nil)
    }
}

/// Decides a ``StepCondition`` with a step's values.
struct ConditionEvaluator {
    let values: TemplateValues

    /// Whether `condition` holds; nesting is bounded by ``StepCondition/maximumDepth``.
    func evaluate(_ condition: StepCondition) throws -> Bool {
        switch condition {
        case .compare(let left, let comparison, let right):
            let (a, b) = (try text(left), try text(right))
            let numbers = (
                Double(a.trimmingCharacters(in: .whitespaces)), Double(b.trimmingCharacters(in: .whitespaces))
            )
            guard comparison.ordersNumbers else {
                let equal = numbers.0.flatMap { x in numbers.1.map { x == $0 } } ?? (a == b)
                return comparison == .equal ? equal : !equal
            }
            guard let x = numbers.0, let y = numbers.1 else {
                let (template, value) = numbers.0 == nil ? (left, a) : (right, b)
                throw StepFailure(
                    "when: '\(comparison.rawValue)' compares numbers, and \(short: template.source) is '\(short: value)'"
                )
            }
            return comparison.holds(x, y)
        case .truthy(let template):
            let value = try text(template).trimmingCharacters(in: .whitespaces)
            if let number = Double(value) { return number != 0 }
            return !["", "false", "null"].contains(value.lowercased())
        case .exists(let template):
            return template.references.allSatisfy { reference in
                switch try? values.value(of: reference) {
                case nil, .null?: false
                case .string(let text)?: !text.isEmpty
                default: true
                }
            }
        case .not(let inner):
            return !(try evaluate(inner))
        case .all(let list):
            for inner in list where !(try evaluate(inner)) { return false }
            return true
        case .any(let list):
            for inner in list where try evaluate(inner) { return true }
            return false
        }
    }

    private func text(_ template: Template) throws -> String {
        do {
            return try template.render(for: .text, with: values)
        } catch {
            throw StepFailure("when: \(error)")
        }
    }

    /// `login.role is 'user', vars.token is not defined`: the values the condition read (the
    /// first five references).
    func describe(_ condition: StepCondition) -> String {
        var seen = Set<String>()
        var parts: [String] = []
        for template in condition.templates {
            for reference in template.references where seen.insert(reference.description).inserted {
                guard parts.count < 5 else { break }
                let name = reference.description
                switch try? values.value(of: reference) {
                case nil: parts.append("\(short: name) is not defined")
                case .null?: parts.append("\(short: name) is null")
                case let value?:
                    parts.append("\(short: name) is '\(MessageValue.shortened(value.interpolated, limit: 60))'")
                }
            }
        }
        return parts.joined(separator: ", ")
    }
}
