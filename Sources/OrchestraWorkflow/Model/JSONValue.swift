import Foundation
import Orchestra

/// A JSON value: what a capture holds, what a JSON body is made of, and what
/// `orchestra run --output json` prints.
///
/// Objects keep their members in order (a response's members come sorted by key, since the
/// parser does not report their order; a document built in code keeps the order it was built
/// in).
///
/// ```swift
/// let value = try JSONValue(parsing: Data(#"{"access_token":"abc","expires_in":60}"#.utf8))
/// value["expires_in"]        // .integer(60)
/// value.text                 // the compact JSON text
/// ```
public enum JSONValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case integer(Int)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([Member])

    /// One member of an object.
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// Parses JSON text.
    ///
    /// - Throws: `DecodingError` when `data` is not JSON.
    public init(parsing data: Data) throws {
        self = try JSONDecoder().decode(Decoded.self, from: data).value
    }

    /// An object from `(key, value)` pairs, in that order.
    public static func object(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(pairs.map { Member($0.key, $0.value) })
    }

    /// The member `key` of an object, or `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The element at `index` of an array, or `nil`.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// Compact JSON text.
    public var text: String {
        var output = ""
        write(to: &output, indent: nil, level: 0)
        return output
    }

    /// JSON text indented by two spaces per level.
    public var prettyText: String {
        var output = ""
        write(to: &output, indent: "  ", level: 0)
        return output
    }

    /// The value as it reads inside a URL, a header or a text body: a string as itself,
    /// anything else as its JSON text (`42`, `true`, `null`, `[1,2]`).
    public var interpolated: String {
        if case .string(let string) = self { return string }
        return text
    }

    public var description: String { text }

    private func write(to output: inout String, indent: String?, level: Int) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value): output += String(value)
        case .number(let value): output += Self.format(value)
        case .string(let value): output += jsonQuoted(value)
        case .array(let elements):
            writeContainer(elements, open: "[", close: "]", to: &output, indent: indent, level: level) { element, output in
                element.write(to: &output, indent: indent, level: level + 1)
            }
        case .object(let members):
            writeContainer(members, open: "{", close: "}", to: &output, indent: indent, level: level) { member, output in
                output += jsonQuoted(member.key) + (indent == nil ? ":" : ": ")
                member.value.write(to: &output, indent: indent, level: level + 1)
            }
        }
    }

    private func writeContainer<Element>(
        _ elements: [Element], open: String, close: String, to output: inout String, indent: String?, level: Int,
        _ writeElement: (Element, inout String) -> Void
    ) {
        output += open
        guard !elements.isEmpty else { return output += close }
        for (offset, element) in elements.enumerated() {
            if offset > 0 { output += "," }
            if let indent { output += "\n" + String(repeating: indent, count: level + 1) }
            writeElement(element, &output)
        }
        if let indent { output += "\n" + String(repeating: indent, count: level) }
        output += close
    }

    /// Finite numbers as JSON numbers (whole values without a fraction); JSON has no NaN or
    /// infinity, so they become `null`.
    private static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        return String(value)
    }
}

/// Decodes any JSON document into a ``JSONValue``, keeping integers apart from other numbers.
private struct Decoded: Decodable {
    var value: JSONValue

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(Decoded.self).value) }
            value = .array(elements)
        } else if let object = try? decoder.container(keyedBy: AnyKey.self) {
            value = .object(try object.allKeys.sorted { $0.stringValue < $1.stringValue }.map { key in
                JSONValue.Member(key.stringValue, try object.decode(Decoded.self, forKey: key).value)
            })
        } else {
            let scalar = try decoder.singleValueContainer()
            if scalar.decodeNil() {
                value = .null
            } else if let bool = try? scalar.decode(Bool.self) {
                value = .bool(bool)
            } else if let integer = try? scalar.decode(Int.self) {
                value = .integer(integer)
            } else if let number = try? scalar.decode(Double.self) {
                value = .number(number)
            } else {
                value = .string(try scalar.decode(String.self))
            }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
