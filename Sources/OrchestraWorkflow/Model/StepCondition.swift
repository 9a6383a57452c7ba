/// `when:` of a step: a condition on captures, variables, environment variables or data
/// columns, decided once the step's dependencies have succeeded. A false condition skips the
/// step (and the steps that depend on it) with the reason; it is not a failure.
///
/// ```yaml
/// when: "{{login.role}} == 'admin'"          # also !=, <, <=, >, >= (numbers)
/// when: "{{flags.beta}}"                      # true unless empty, false, 0 or null
/// when: { exists: "{{vars.token}}" }          # defined and not empty
/// when: { not: { exists: "{{env.CI}}" } }
/// when: { all: ["{{a.n}} > 1", "{{b.ok}}"] }  # also any:
/// ```
///
/// In a `for_each` step the condition is decided once for the step, before its list is
/// read: `{{item}}` and `{{index}}` cannot be used in it.
package indirect enum StepCondition: Sendable, Hashable {
    /// `LEFT OP RIGHT`: equal text (or equal numbers when both sides are numbers), or an order
    /// of numbers.
    case compare(Template, Comparison, Template)
    /// A lone value: true unless it is empty, `false`, `0` or `null`.
    case truthy(Template)
    /// `{ exists: "{{vars.token}}" }`: every reference has a value that is neither null nor
    /// empty. An undefined variable or environment variable is not an error here.
    case exists(Template)
    case not(StepCondition)
    case all([StepCondition])
    case any([StepCondition])

    /// The operators of ``compare(_:_:_:)``: those of an assertion.
    package typealias Comparison = Assertion.Comparison

    /// The deepest nesting of `not`, `all` and `any` a file may give.
    package static let maximumDepth = 8
    /// The most conditions an `all` or `any` list may hold.
    package static let maximumListCount = 100

    /// Every template of the condition, in the order written (no recursion: an explicit stack).
    package var templates: [Template] {
        var result: [Template] = []
        var stack: [StepCondition] = [self]
        while let condition = stack.popLast() {
            switch condition {
            case .compare(let left, _, let right): result += [left, right]
            case .truthy(let template), .exists(let template): result.append(template)
            case .not(let inner): stack.append(inner)
            case .all(let list), .any(let list): stack += list.reversed()
            }
        }
        return result
    }
}

/// A step's `when:` field: the condition and its text as written, for reports and diagrams.
package struct StepWhen: Sendable, Hashable {
    package var condition: StepCondition
    /// `"{{login.role}} == 'admin'"`, `{ exists: "{{vars.token}}" }`.
    package var source: String
    package var location: SourceLocation?

    package init(condition: StepCondition, source: String, location: SourceLocation? = nil) {
        self.condition = condition
        self.source = source
        self.location = location
    }
}

extension Assertion.Comparison {
    /// Whether it orders numbers rather than comparing them or text for equality.
    var ordersNumbers: Bool { self != .equal && self != .notEqual }
}
