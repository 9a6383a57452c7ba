import Foundation
import Orchestra

/// A JSON value: what a capture holds, what a JSON body is made of, and what
/// `orchestra run --output json` prints.
///
/// Values read from JSON text (``init(parsing:)``) or from a workflow file come back out as
/// they were written: objects keep their members in order, numbers keep their text
/// (``JSONNumber``), so a value captured from one response is sent on unchanged.
///
/// ```swift
/// let value = try JSONValue(parsing: Data(#"{"id":12345678901234567890,"n":60,"r":1.0}"#.utf8))
/// value["n"]            // .integer(60)
/// value["id"]?.text     // "12345678901234567890"
/// value.text            // {"id":12345678901234567890,"n":60,"r":1.0}
/// ```
package enum JSONValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// A whole number that `Int` holds, written as Swift writes it (`42`, `-7`).
    case integer(Int)
    /// Any other number, with its text as written: `1.0`, `-0`, `0.1`, `1e400`,
    /// `12345678901234567890`.
    case number(JSONNumber)
    case string(String)
    /// A list: of values (`.array([.integer(1)])`), or a view of a parsed document
    /// (``init(parsing:)``), which costs about twice its text instead of a tree of values.
    case array(JSONArray)
    /// The members of an object, in order; a list or a view of a parsed document, like `array`.
    case object(JSONObject)

    /// One member of an object.
    package struct Member: Sendable, Hashable {
        package var key: String
        package var value: JSONValue

        package init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The deepest nesting of arrays and objects that ``init(parsing:)`` and workflow bodies
    /// accept. Why: values are compared, copied and freed level by level, so a limit keeps a
    /// hostile response from exhausting the stack; beyond it, parsing fails with a message.
    package static let maxDepth = 512

    /// The array of `elements`.
    package static func array(_ elements: [JSONValue]) -> JSONValue {
        .array(JSONArray(elements))
    }

    /// The object of `members`, in that order.
    package static func object(_ members: [Member]) -> JSONValue {
        .object(JSONObject(members))
    }

    /// An object from `(key, value)` pairs, in that order.
    package static func object(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(pairs.map { Member($0.key, $0.value) })
    }

    /// The number `value`, written as Swift writes a `Double` (`0.5`, `1.0`, `1e+20`); `null`
    /// for NaN and the infinities, which JSON cannot write.
    package static func number(_ value: Double) -> JSONValue {
        JSONNumber(value).map(JSONValue.number) ?? .null
    }

    /// The number whose JSON text is `text`, as the parser reads it: ``integer(_:)`` when
    /// `Int` holds it and Swift writes it the same way, `number(_:)` otherwise;
    /// `nil` if `text` is not a JSON number.
    package init?(numberText text: String) {
        guard let number = JSONNumber(text) else { return nil }
        self = JSONValue(number)
    }

    /// `number` as the parser reads it (see ``init(numberText:)``).
    init(_ number: JSONNumber) {
        if number.isInteger, let integer = Int(number.text), String(integer) == number.text {
            self = .integer(integer)
        } else {
            self = .number(number)
        }
    }

    /// The member `key` of an object (the first one, if the key is repeated), or `nil`.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The element at `index` of an array, or `nil`.
    package subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// Compact JSON text. Numbers are written as they were read.
    ///
    /// Complexity: linear in the size of the text; iterative, whatever the nesting.
    package var text: String {
        JSONWriter.text(of: self, indent: nil)
    }

    /// JSON text indented by two spaces per level.
    package var prettyText: String {
        JSONWriter.text(of: self, indent: "  ")
    }

    /// The start of ``text``: all of it if it has at most `maximumBytes` UTF-8 bytes, else
    /// (`isComplete` false) its first `maximumBytes` or a little more, written without the rest.
    /// *Why:* a message quotes 200 characters of a value; writing the whole text of a 30 MB
    /// response to cut it took most of a schema check's time and doubled its memory.
    package func textPrefix(maximumBytes: Int) -> (text: String, isComplete: Bool) {
        JSONWriter.text(of: self, indent: nil, maximumBytes: maximumBytes)
    }

    /// The value as it reads inside a URL, a header or a text body: a string as itself,
    /// anything else as its JSON text (`42`, `1.0`, `true`, `null`, `[1,2]`).
    package var interpolated: String {
        if case .string(let string) = self { return string }
        return text
    }

    package var description: String { text }
}

/// Writes JSON text with an explicit stack: no recursion over the value's nesting, and one
/// task per open array or object (its elements are read as they are written).
private enum JSONWriter {
    private enum Task {
        case value(JSONValue, level: Int)
        /// The elements of an array from `next` on, then its closing bracket.
        case elements(JSONArray, next: Int, level: Int)
        /// The members of an object from `next` on, then its closing brace.
        case members(JSONObject, next: Int, level: Int)
    }

    static func text(of root: JSONValue, indent: String?) -> String {
        text(of: root, indent: indent, maximumBytes: .max).text
    }

    /// The text, or once it passes `maximumBytes` UTF-8 bytes what was written so far.
    static func text(of root: JSONValue, indent: String?, maximumBytes: Int) -> (text: String, isComplete: Bool) {
        var output = ""
        var tasks: [Task] = [.value(root, level: 0)]
        while let task = tasks.popLast() {
            if output.utf8.count > maximumBytes { return (output, false) }
            switch task {
            case .value(let value, let level):
                switch value {
                case .null: output += "null"
                case .bool(let value): output += value ? "true" : "false"
                case .integer(let value): output += String(value)
                case .number(let value): output += value.text
                case .string(let value): output += jsonQuoted(value)
                case .array(let elements):
                    output += "["
                    tasks.append(.elements(elements, next: 0, level: level))
                case .object(let members):
                    output += "{"
                    tasks.append(.members(members, next: 0, level: level))
                }
            case .elements(let elements, let next, let level):
                guard next < elements.count else {
                    if next > 0 { output += closing(level: level, indent: indent) }
                    output += "]"
                    continue
                }
                output += separator(first: next == 0, level: level + 1, indent: indent)
                tasks.append(.elements(elements, next: next + 1, level: level))
                tasks.append(.value(elements[next], level: level + 1))
            case .members(let members, let next, let level):
                guard next < members.count else {
                    if next > 0 { output += closing(level: level, indent: indent) }
                    output += "}"
                    continue
                }
                let member = members[next]
                output += separator(first: next == 0, level: level + 1, indent: indent)
                output += jsonQuoted(member.key) + (indent == nil ? ":" : ": ")
                tasks.append(.members(members, next: next + 1, level: level))
                tasks.append(.value(member.value, level: level + 1))
            }
        }
        return (output, true)
    }

    /// What goes before an element: a comma unless it is the first, then its indentation.
    private static func separator(first: Bool, level: Int, indent: String?) -> String {
        (first ? "" : ",") + (indent.map { "\n" + String(repeating: $0, count: level) } ?? "")
    }

    /// What goes before a closing bracket.
    private static func closing(level: Int, indent: String?) -> String {
        indent.map { "\n" + String(repeating: $0, count: level) } ?? ""
    }
}
