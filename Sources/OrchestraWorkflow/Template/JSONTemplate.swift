/// A JSON body whose strings may hold templates: the `body:` of a step written as a YAML
/// mapping or list.
///
/// Rendering keeps JSON well formed whatever the captured values hold: a string that is
/// exactly one reference (`"{{login.user}}"`) becomes the captured JSON value as is, so numbers
/// stay numbers and objects stay objects; a reference inside a longer string is inserted as
/// text and the whole string is JSON-escaped. Keys are not templated. Numbers and member
/// order stay as written (`1.0` stays `1.0`, `12345678901234567890` keeps every digit).
///
/// ```swift
/// // body: { user: "{{me.id}}", note: "hello {{me.name}}" }
/// try body.render(with: values).text      // {"user":42,"note":"hello Ada \"the\" Countess"}
/// ```
package indirect enum JSONTemplate: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A whole number that `Int` holds, written as Swift writes it.
    case integer(Int)
    /// Any other number, with its text as written (see ``JSONNumber``).
    case number(JSONNumber)
    case string(Template)
    case array([JSONTemplate])
    case object([(key: String, value: JSONTemplate)])

    /// The body as JSON, with every reference replaced.
    ///
    /// - Throws: ``TemplateValues/Missing`` if a value is missing (validation prevents it).
    package func render(with values: TemplateValues) throws(TemplateValues.Missing) -> JSONValue {
        switch self {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .integer(let value): return .integer(value)
        case .number(let value): return .number(value)
        case .string(let template):
            if let reference = template.soleReference { return try values.value(of: reference) }
            return .string(try template.render(for: .text, with: values))
        case .array(let elements):
            var rendered: [JSONValue] = []
            for element in elements { rendered.append(try element.render(with: values)) }
            return .array(rendered)
        case .object(let members):
            var rendered: [JSONValue.Member] = []
            for member in members {
                rendered.append(JSONValue.Member(member.key, try member.value.render(with: values)))
            }
            return .object(rendered)
        }
    }

    /// Every template in the body, in order.
    package var templates: [Template] {
        switch self {
        case .null, .bool, .integer, .number: []
        case .string(let template): [template]
        case .array(let elements): elements.flatMap(\.templates)
        case .object(let members): members.flatMap(\.value.templates)
        }
    }

    package static func == (lhs: JSONTemplate, rhs: JSONTemplate) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .integer(let value): hasher.combine(value)
        case .number(let value): hasher.combine(value)
        case .string(let template): hasher.combine(template)
        case .array(let elements): hasher.combine(elements)
        case .object(let members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }
}
