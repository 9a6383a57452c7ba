import Foundation
import Orchestra
import Yams

/// Reads ``YAMLNode``s into values, recording a ``WorkflowError`` (with the node's line and
/// column, the step and the field) for every node that is not what the format expects.
/// Every reader returns `nil` after recording its error, so parsing goes on and reports all
/// problems at once.
struct NodeReader {
    let file: String?
    private(set) var errors: [WorkflowError] = []
    /// What was reported where, to report it once: a node that aliases share (`expect: *x` in
    /// several steps) is read once per alias, with the anchor's location each time.
    private var reported: Set<Reported> = []

    private struct Reported: Hashable {
        var code: WorkflowError.Code
        var message: String
        var location: SourceLocation
        var field: String?
    }

    init(file: String?) {
        self.file = file
    }

    /// Where `node` starts.
    static func location(_ node: Node?) -> SourceLocation? {
        node?.mark
    }

    /// Takes the problems another reader found (an included file's).
    mutating func adopt(_ errors: [WorkflowError]) {
        self.errors += errors
    }

    mutating func fail(
        _ code: WorkflowError.Code, _ message: String, at node: Node?, step: String? = nil, field: String? = nil
    ) {
        fail(code, message, at: Self.location(node), step: step, field: field)
    }

    mutating func fail(
        _ code: WorkflowError.Code, _ message: String, at location: SourceLocation?, step: String? = nil,
        field: String? = nil
    ) {
        // The same problem at the same place is reported once, under the first step that met it.
        if let location,
            !reported.insert(Reported(code: code, message: message, location: location, field: field)).inserted
        {
            return
        }
        // A step that is not a valid id is named escaped (`\u{430}dmin`): see WorkflowChecker.shownID.
        errors.append(
            WorkflowError(
                code, message, file: location?.file ?? file, location: location,
                step: step.map(WorkflowChecker.shownID), field: field))
    }

    // MARK: - Mappings

    /// A mapping's entries, with every key checked against `allowed` (an unknown key is
    /// reported with the closest allowed one, then `hint`). `field` names the mapping in messages.
    mutating func entries(
        _ node: Node, allowed: [String], step: String?, field: String?, hint: String = ""
    ) -> [(key: String, node: Node)]? {
        guard case .mapping(let mapping) = node else {
            fail(
                .invalidValue, "must be a mapping (key: value), got \(Self.describe(node))", at: node, step: step,
                field: field)
            return nil
        }
        var result: [(key: String, node: Node)] = []
        for (keyNode, value) in mapping {
            guard let key = scalarText(keyNode) else {
                fail(
                    .invalidValue, "keys must be plain names, got \(Self.describe(keyNode))", at: keyNode, step: step,
                    field: field)
                continue
            }
            guard allowed.contains(key) else {
                let place = step.map { "step '\(short: $0)'" } ?? field.map { "'\(short: $0)'" } ?? "the workflow"
                let suggestion = Self.closest(to: key, in: allowed).map { "did you mean '\($0)'? " } ?? ""
                fail(
                    .unknownField,
                    "unknown field '\(short: key)' in \(place); \(suggestion)expected one of: \(allowed.joined(separator: ", "))\(hint)",
                    at: keyNode, step: step, field: field.map { "\($0).\(key)" } ?? key
                )
                continue
            }
            result.append((key, value))
        }
        return result
    }

    /// A mapping's entries without checking the keys (`vars`, `headers`, `captures`, `hosts`).
    mutating func freeEntries(_ node: Node, step: String?, field: String) -> [(key: String, keyNode: Node, node: Node)]?
    {
        guard case .mapping(let mapping) = node else {
            fail(
                .invalidValue, "must be a mapping (name: value), got \(Self.describe(node))", at: node, step: step,
                field: field)
            return nil
        }
        var result: [(key: String, keyNode: Node, node: Node)] = []
        for (keyNode, value) in mapping {
            guard let key = scalarText(keyNode) else {
                fail(
                    .invalidValue, "names must be text, got \(Self.describe(keyNode))\(Self.templateHint(keyNode))",
                    at: keyNode, step: step, field: field)
                continue
            }
            result.append((key, keyNode, value))
        }
        return result
    }

    // MARK: - Scalars

    /// Text: any scalar (numbers and booleans as written).
    mutating func string(_ node: Node, step: String?, field: String) -> String? {
        if let text = scalarText(node) { return text }
        fail(
            .invalidValue, "must be text, got \(Self.describe(node))\(Self.templateHint(node))", at: node, step: step,
            field: field)
        return nil
    }

    /// A template: text with `{{…}}` references.
    mutating func template(_ node: Node, step: String?, field: String) -> Template? {
        guard let text = string(node, step: step, field: field) else { return nil }
        do {
            return try Template(parsing: text)
        } catch {
            fail(.invalidTemplate, error.message, at: node, step: step, field: field)
            return nil
        }
    }

    /// A whole number of at least `minimum`.
    mutating func integer(_ node: Node, minimum: Int, step: String?, field: String, what: String = "an integer") -> Int?
    {
        guard case .scalar(let scalar) = node, node.tagName == .int, let value = node.int else {
            fail(
                .invalidValue, "must be \(what) ≥ \(minimum), got \(Self.describe(node))", at: node, step: step,
                field: field)
            return nil
        }
        guard value >= minimum else {
            fail(
                .invalidValue, "must be \(what) ≥ \(minimum), got '\(short: scalar.string)'", at: node, step: step,
                field: field)
            return nil
        }
        return value
    }

    /// A rate: `20/s`, `30/min`, `5000/h`, `5/10s` (``RateText``).
    mutating func rate(_ node: Node, step: String?, field: String) -> Rate? {
        guard case .scalar(let scalar) = node else {
            fail(
                .invalidValue, "must be \(RateText.expected), got \(Self.describe(node))", at: node, step: step,
                field: field)
            return nil
        }
        switch RateText.parse(scalar.string) {
        case .success(let rate): return rate
        case .failure(let error):
            fail(.invalidValue, "\(error.message), got '\(short: scalar.string)'", at: node, step: step, field: field)
            return nil
        }
    }

    /// `true` or `false`.
    mutating func bool(_ node: Node, step: String?, field: String) -> Bool? {
        guard node.tagName == .bool, let value = node.bool else {
            fail(.invalidValue, "must be true or false, got \(Self.describe(node))", at: node, step: step, field: field)
            return nil
        }
        return value
    }

    /// A positive duration: `500ms`, `5s`, `2m`, `1h`, or a number of seconds.
    mutating func duration(
        _ node: Node, step: String?, field: String, allowZero: Bool = false, maximum: Duration
    ) -> Duration? {
        let problem = "must be a duration such as 500ms, 5s, 2m or a number of seconds"
        guard case .scalar(let scalar) = node else {
            fail(.invalidValue, "\(problem), got \(Self.describe(node))", at: node, step: step, field: field)
            return nil
        }
        guard let seconds = Self.parseSeconds(scalar.string) else {
            fail(.invalidValue, "\(problem), got '\(short: scalar.string)'", at: node, step: step, field: field)
            return nil
        }
        guard seconds > 0 || (allowZero && seconds == 0) else {
            fail(
                .invalidValue, "must be \(allowZero ? "0 or more" : "more than 0"), got '\(short: scalar.string)'",
                at: node, step: step, field: field)
            return nil
        }
        // Compared as seconds, before any conversion: a huge value is refused, not overflowed.
        guard seconds <= maximum / .seconds(1) else {
            let range = "\(allowZero ? "0" : "more than 0") to \(StepErrors.format(maximum))"
            fail(.invalidValue, "must be \(range), got '\(short: scalar.string)'", at: node, step: step, field: field)
            return nil
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// `500ms`, `1.5s`, `2m`, `1h`, `3` (seconds) as a finite number of seconds; `nil` if it is
    /// none of these.
    static func parseSeconds(_ text: String) -> Double? {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3_600)]
        for unit in units where text.hasSuffix(unit.suffix) {
            let number = text.dropLast(unit.suffix.count).trimmingCharacters(in: .whitespaces)
            guard let value = Double(number), value.isFinite, !number.hasPrefix("+") else { return nil }
            let seconds = value * unit.seconds
            return seconds.isFinite ? seconds : nil
        }
        guard let seconds = Double(text), seconds.isFinite else { return nil }
        return seconds
    }

    /// A one-or-many field (`needs: login` or `needs: [login, album]`) as its elements.
    mutating func list(_ node: Node) -> [Node] {
        if case .sequence(let sequence) = node { return Array(sequence) }
        return [node]
    }

    /// The text of a scalar, `nil` for mappings and sequences.
    func scalarText(_ node: Node) -> String? {
        if case .scalar(let scalar) = node { return scalar.string }
        return nil
    }

    // MARK: - Messages

    /// How a node reads in a message: `'0'`, `a mapping`, `a list`.
    static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar):
            if node.tagName == .null { return "nothing (null)" }
            return "'\(short: scalar.string)'"
                + (scalar.style == .doubleQuoted || scalar.style == .singleQuoted ? " (quoted text)" : "")
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        }
    }

    /// For `url: {{vars.base}}`, which YAML reads as a mapping inside a mapping: a hint to
    /// quote it.
    static func templateHint(_ node: Node) -> String {
        guard case .mapping(let outer) = node, outer.count == 1, case .mapping(let inner) = outer[0].key,
            inner.count == 1, case .scalar(let name) = inner[0].key
        else { return "" }
        return " (YAML read an unquoted template as a mapping: quote it, as in \"{{\(short: name.string)}}\")"
    }

    /// The allowed name closest to `name`, if it is close enough to be a typo.
    static func closest(to name: String, in allowed: [String]) -> String? {
        // More than 2 edits from every name: none is close, and a huge name (a 50 MB key) is not
        // compared character by character.
        let longest = allowed.lazy.map(\.count).max() ?? 0
        guard name.dropFirst(longest + 2).isEmpty else { return nil }
        let scored = allowed.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, min(2, name.count / 3)) || best.0.hasPrefix(name) && name.count >= 2 ? best.0 : nil
    }

    /// Edits (insert, delete, replace, or swap two neighbours: `bsae` is one from `base`) that
    /// turn `a` into `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var beforePrevious: [Int] = []
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            beforePrevious = previous
            previous = current
        }
        return previous[b.count]
    }
}
