import Foundation
import Yams

extension WorkflowParser {
    /// `until: { interval: 1s, max_attempts: 20 }`, where `interval` is a duration or
    /// `{ initial: 1s, multiplier: 2, max: 30s }`. `until: {}` polls every second within the
    /// step's timeout.
    mutating func until(_ node: Node, step: String) -> StepPoll? {
        guard let entries = reader.entries(node, allowed: ["interval", "max_attempts"], step: step, field: "until")
        else { return nil }
        var poll = StepPoll()
        poll.location = NodeReader.location(node)
        for (key, value) in entries {
            switch key {
            case "max_attempts":
                guard
                    let attempts = reader.integer(
                        value, minimum: 1, step: step, field: "until.max_attempts", what: "a number of attempts")
                else { continue }
                guard attempts <= StepPoll.maximumAttempts else {
                    reader.fail(
                        .invalidValue, "must be at most \(StepPoll.maximumAttempts), got \(attempts)", at: value,
                        step: step, field: "until.max_attempts")
                    continue
                }
                poll.maxAttempts = attempts
            default:
                interval(value, step: step, into: &poll)
            }
        }
        return poll
    }

    /// `interval: 2s` or `interval: { initial: 1s, multiplier: 2, max: 30s }`.
    private mutating func interval(_ node: Node, step: String, into poll: inout StepPoll) {
        if case .scalar = node {
            poll.interval =
                reader.duration(
                    node, step: step, field: "until.interval", allowZero: true, maximum: StepPoll.maximumInterval)
                ?? poll.interval
            return
        }
        guard
            let entries = reader.entries(
                node, allowed: ["initial", "multiplier", "max"], step: step, field: "until.interval")
        else { return }
        for (key, value) in entries {
            let field = "until.interval.\(key)"
            switch key {
            case "initial":
                poll.interval =
                    reader.duration(value, step: step, field: field, allowZero: true, maximum: StepPoll.maximumInterval)
                    ?? poll.interval
            case "max":
                poll.maxInterval = reader.duration(
                    value, step: step, field: field, maximum: StepPoll.maximumInterval)
            default:
                let text = reader.scalarText(value)
                guard let text, let number = Double(text), number.isFinite, number >= 1,
                    number <= StepPoll.maximumMultiplier
                else {
                    reader.fail(
                        .invalidValue,
                        "must be a number from 1 to \(Int(StepPoll.maximumMultiplier)), got \(NodeReader.describe(value))",
                        at: value, step: step, field: field)
                    continue
                }
                poll.multiplier = number
            }
        }
    }

    /// `when: "{{login.role}} == 'admin'"`, `when: { exists: "{{vars.token}}" }`, `{ not: … }`,
    /// `{ all: [...] }`, `{ any: [...] }`. Its templates are checked like every other's
    /// (``TemplateSite``), except that `exists:` may name a variable or an environment
    /// variable that is not defined.
    mutating func when(_ node: Node, step: String) -> StepWhen? {
        let location = NodeReader.location(node)
        guard let condition = condition(node, step: step, depth: 0, location: location) else { return nil }
        let source = reader.scalarText(node).map { "\"\($0)\"" } ?? Self.flowText(of: node)
        return StepWhen(condition: condition, source: source, location: location)
    }

    /// One condition; nested ones at most ``StepCondition/maximumDepth`` deep (the recursion is
    /// bounded by it).
    private mutating func condition(
        _ node: Node, step: String, depth: Int, location: SourceLocation?
    ) -> StepCondition? {
        guard depth < StepCondition.maximumDepth else {
            reader.fail(
                .invalidValue, "conditions may nest at most \(StepCondition.maximumDepth) deep", at: node, step: step,
                field: "when")
            return nil
        }
        if case .scalar(let scalar) = node {
            guard node.tagName != .null else {
                reader.fail(
                    .invalidValue, "must be a condition, got nothing (null)", at: node, step: step, field: "when")
                return nil
            }
            return comparison(scalar.string, node: node, step: step)
        }
        guard case .mapping(let mapping) = node, mapping.count == 1 else {
            reader.fail(
                .invalidValue,
                "must be a condition: text such as \"{{login.role}} == 'admin'\", or one of { exists: … }, { not: … }, { all: [...] }, { any: [...] }; got \(NodeReader.describe(node))\(NodeReader.templateHint(node))",
                at: node, step: step, field: "when")
            return nil
        }
        guard let entries = reader.entries(node, allowed: ["exists", "not", "all", "any"], step: step, field: "when"),
            let (key, value) = entries.first
        else { return nil }
        switch key {
        case "exists":
            guard let template = whenTemplate(value, step: step, mayBeUndefined: true) else { return nil }
            guard !template.references.isEmpty else {
                reader.fail(
                    .invalidValue, "exists: needs a reference such as \"{{vars.token}}\"", at: value, step: step,
                    field: "when.exists")
                return nil
            }
            return .exists(template)
        case "not":
            return condition(value, step: step, depth: depth + 1, location: location).map(StepCondition.not)
        default:
            guard case .sequence(let sequence) = value, !sequence.isEmpty,
                sequence.count <= StepCondition.maximumListCount
            else {
                reader.fail(
                    .invalidValue,
                    "must be a list of 1 to \(StepCondition.maximumListCount) conditions, got \(NodeReader.describe(value))",
                    at: value, step: step, field: "when.\(key)")
                return nil
            }
            var list: [StepCondition] = []
            for item in sequence {
                guard let inner = condition(item, step: step, depth: depth + 1, location: location) else { return nil }
                list.append(inner)
            }
            return key == "all" ? .all(list) : .any(list)
        }
    }

    /// `LEFT OP RIGHT` or a lone value.
    private mutating func comparison(_ text: String, node: Node, step: String) -> StepCondition? {
        switch StepCondition.split(text) {
        case .failure(let problem):
            reader.fail(.invalidValue, "\(problem) in '\(short: text)'", at: node, step: step, field: "when")
            return nil
        case .success(nil):
            guard let template = whenTemplate(text, node: node, step: step, mayBeUndefined: false) else { return nil }
            guard !template.references.isEmpty else {
                reader.fail(
                    .invalidValue,
                    "'\(short: text)' has no {{…}} reference, so it never changes; write a comparison such as \"{{login.role}} == 'admin'\"",
                    at: node, step: step, field: "when")
                return nil
            }
            return .truthy(template)
        case .success(let parts?):
            guard let left = whenTemplate(parts.left, node: node, step: step, mayBeUndefined: false),
                let right = whenTemplate(parts.right, node: node, step: step, mayBeUndefined: false)
            else { return nil }
            guard !left.references.isEmpty || !right.references.isEmpty else {
                reader.fail(
                    .invalidValue,
                    "neither side of '\(short: text)' has a {{…}} reference, so it never changes",
                    at: node, step: step, field: "when")
                return nil
            }
            return .compare(left, parts.comparison, right)
        }
    }

    private mutating func whenTemplate(_ node: Node, step: String, mayBeUndefined: Bool) -> Template? {
        guard let text = reader.string(node, step: step, field: "when") else { return nil }
        return whenTemplate(text, node: node, step: step, mayBeUndefined: mayBeUndefined)
    }

    /// `text` as a template, remembered as a site of the `when` field; `{{item}}` is refused.
    private mutating func whenTemplate(_ text: String, node: Node, step: String, mayBeUndefined: Bool) -> Template? {
        let template: Template
        do {
            template = try Template(parsing: text)
        } catch {
            reader.fail(.invalidTemplate, error.message, at: node, step: step, field: "when")
            return nil
        }
        if let element = template.references.first(where: \.isElement) {
            reader.fail(
                .invalidTemplate,
                "\(short: element): when: is decided once for the step, before its elements are sent; it cannot use {{item}} or {{index}}",
                at: node, step: step, field: "when")
            return nil
        }
        sites.append(
            TemplateSite(
                template: template, step: step, field: "when", location: NodeReader.location(node),
                variablesOnly: false, mayBeUndefined: mayBeUndefined))
        return template
    }

    /// A mapping as one line of flow YAML, for reports: `{ exists: "{{vars.token}}" }`
    /// (at most ``MessageValue/limit`` characters; iterative).
    static func flowText(of node: Node) -> String {
        enum Piece {
            case node(Node)
            case text(String)
        }
        var out = ""
        var stack: [Piece] = [.node(node)]
        while let piece = stack.popLast(), out.count <= MessageValue.limit {
            switch piece {
            case .text(let text): out += text
            case .node(.scalar(let scalar)): out += "\"\(scalar.string)\""
            case .node(.mapping(let mapping)):
                var pieces: [Piece] = [.text("{ ")]
                for (index, pair) in mapping.enumerated() {
                    if index > 0 { pieces.append(.text(", ")) }
                    var key = "?"
                    if case .scalar(let scalar) = pair.key { key = scalar.string }
                    pieces += [.text(key + ": "), .node(pair.value)]
                }
                pieces.append(.text(" }"))
                stack += pieces.reversed()
            case .node(.sequence(let sequence)):
                var pieces: [Piece] = [.text("[")]
                for (index, item) in sequence.enumerated() {
                    if index > 0 { pieces.append(.text(", ")) }
                    pieces.append(.node(item))
                }
                pieces.append(.text("]"))
                stack += pieces.reversed()
            case .node: break
            }
        }
        return MessageValue.shortened(out)
    }
}

extension StepCondition {
    /// The sides and operator of `text` (`{{a.b}} == 'x'`), `nil` for a lone value, or the
    /// problem. Operators inside `{{…}}` or quotes do not count; a quoted side is text.
    static func split(_ text: String) -> Result<(left: String, comparison: Comparison, right: String)?, Problem> {
        let characters = Array(text)
        var index = 0
        var quote: Character?
        var inBraces = false
        var found: (at: Int, comparison: Comparison)?
        while index < characters.count {
            let character = characters[index]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            if inBraces {
                if character == "}", next == "}" {
                    inBraces = false
                    index += 1
                }
            } else if let open = quote {
                if character == open { quote = nil }
            } else if character == "{", next == "{" {
                inBraces = true
                index += 1
            } else if character == "'" || character == "\"" {
                quote = character
            } else if "=!<>".contains(character) {
                let two = next.map { String([character, $0]) } ?? ""
                let comparison = Comparison(rawValue: two) ?? Comparison(rawValue: String(character))
                guard let comparison else {
                    return .failure(Problem(character == "=" ? "use == to compare" : "'!' must be followed by '='"))
                }
                guard found == nil else {
                    return .failure(Problem("one comparison per condition; use { all: [...] } or { any: [...] }"))
                }
                found = (index, comparison)
                index += comparison.rawValue.count - 1
            }
            index += 1
        }
        if quote != nil { return .failure(Problem("a quote is not closed")) }
        guard let found else { return .success(nil) }
        let left = String(characters[..<found.at])
        let right = String(characters[(found.at + found.comparison.rawValue.count)...])
        guard let leftSide = side(left), let rightSide = side(right) else {
            return .failure(Problem("'\(found.comparison.rawValue)' needs a value on each side"))
        }
        return .success((leftSide, found.comparison, rightSide))
    }

    /// A side, trimmed, its quotes removed; `nil` if empty.
    private static func side(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        if trimmed.count >= 2, let first = trimmed.first, first == "'" || first == "\"", trimmed.last == first {
            return String(trimmed.dropFirst().dropLast())
        }
        return trimmed
    }

    /// Why a condition's text cannot be read.
    struct Problem: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
