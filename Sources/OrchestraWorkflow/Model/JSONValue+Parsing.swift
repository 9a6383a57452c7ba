import Foundation
import Orchestra

extension JSONValue {
    /// Parses JSON text (RFC 8259), keeping what was written: members in their order (a
    /// repeated key is kept too; the subscript finds the first), numbers with their text
    /// (``JSONNumber``), strings with their escapes decoded. A UTF-8 byte order mark at the
    /// start is skipped.
    ///
    /// Complexity: linear in the size of `data`, with an explicit stack (no recursion), and at
    /// most ``maxDepth`` levels of arrays and objects.
    ///
    /// - Throws: ``JSONSyntaxError`` when `data` is not one JSON value (with nothing but
    ///   whitespace around it), is not UTF-8, has a lone surrogate escape such as `"\ud800"`,
    ///   or nests deeper than ``maxDepth``; the message says what and at which byte.
    package init(parsing data: Data) throws(JSONSyntaxError) {
        var parser = JSONParser(bytes: [UInt8](data))
        self = try parser.document()
    }
}

/// Why some text is not JSON, and where.
package struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong: `expected ',' or ']' after an array element`.
    package var reason: String
    /// The byte offset in the text where it was found, from 0.
    package var offset: Int

    package init(_ reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// The reason and the offset: `expected ':' after an object key at byte 7`.
    package var description: String { "\(reason) at byte \(offset)" }
}

/// A JSON parser over bytes with an explicit stack of open arrays and objects.
struct JSONParser {
    private let bytes: [UInt8]
    private var position = 0

    /// An array or object being read.
    private struct Container {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [JSONValue.Member] = []
        /// The key of the member whose value is being read.
        var key = ""
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The one value of the whole text.
    mutating func document() throws(JSONSyntaxError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        var stack: [Container] = []
        while true {
            // Read a value, or open a container and go on with its first key or element.
            skipWhitespace()
            guard let byte = peek() else {
                throw JSONSyntaxError(
                    stack.isEmpty ? "no JSON value" : "the text ends inside \(Self.describe(stack))", offset: position)
            }
            var value: JSONValue
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard stack.count < JSONValue.maxDepth else {
                    throw JSONSyntaxError(
                        "arrays and objects nested deeper than \(JSONValue.maxDepth) levels", offset: position)
                }
                let isObject = byte == UInt8(ascii: "{")
                position += 1
                skipWhitespace()
                if peek() == UInt8(ascii: isObject ? "}" : "]") {
                    position += 1
                    value = isObject ? .object([]) : .array([])
                } else {
                    var container = Container(isObject: isObject)
                    if isObject { container.key = try key() }
                    stack.append(container)
                    continue
                }
            case UInt8(ascii: "\""):
                value = .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let end = try JSONNumber.scan(bytes, from: position)
                let text = String(decoding: bytes[position..<end], as: UTF8.self)
                position = end
                value = JSONValue(JSONNumber(validated: text))
            default:
                throw JSONSyntaxError("unexpected \(Self.describe(byte)); expected a JSON value", offset: position)
            }
            // Put the value into its container; close every container that ends with it.
            while let top = stack.indices.last {
                if stack[top].isObject {
                    stack[top].members.append(JSONValue.Member(stack[top].key, value))
                } else {
                    stack[top].elements.append(value)
                }
                skipWhitespace()
                let isObject = stack[top].isObject
                guard let next = peek() else {
                    throw JSONSyntaxError("the text ends inside \(Self.describe(stack))", offset: position)
                }
                position += 1
                if next == UInt8(ascii: ",") {
                    if isObject {
                        skipWhitespace()
                        stack[top].key = try key()
                    }
                    break
                }
                guard next == UInt8(ascii: isObject ? "}" : "]") else {
                    let expected = isObject ? "',' or '}' after an object member" : "',' or ']' after an array element"
                    throw JSONSyntaxError(
                        "unexpected \(Self.describe(next)); expected \(expected)", offset: position - 1)
                }
                let closed = stack.removeLast()
                value = closed.isObject ? .object(closed.members) : .array(closed.elements)
            }
            if stack.isEmpty {
                skipWhitespace()
                guard position == bytes.count else {
                    throw JSONSyntaxError(
                        "unexpected \(Self.describe(bytes[position])) after the JSON value", offset: position)
                }
                return value
            }
        }
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - position >= expected.count,
            bytes[position..<position + expected.count].elementsEqual(expected)
        else {
            throw JSONSyntaxError("expected '\(word)'", offset: position)
        }
        position += expected.count
    }

    /// An object key and the ':' after it.
    private mutating func key() throws(JSONSyntaxError) -> String {
        guard peek() == UInt8(ascii: "\"") else {
            throw JSONSyntaxError(
                peek().map { "unexpected \(Self.describe($0)); expected an object key in double quotes" }
                    ?? "the text ends inside an object", offset: position)
        }
        let key = try string()
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else {
            throw JSONSyntaxError("expected ':' after the object key \(jsonQuoted(key))", offset: position)
        }
        position += 1
        return key
    }

    /// A string, from its opening quote to after its closing one.
    private mutating func string() throws(JSONSyntaxError) -> String {
        let start = position
        position += 1
        var decoded: [UInt8] = []
        var segment = position
        while true {
            guard let byte = peek() else { throw JSONSyntaxError("a string is not closed", offset: start) }
            switch byte {
            case UInt8(ascii: "\""):
                decoded += bytes[segment..<position]
                position += 1
                guard let string = String(bytes: decoded, encoding: .utf8) else {
                    throw JSONSyntaxError("the string is not valid UTF-8", offset: start)
                }
                return string
            case UInt8(ascii: "\\"):
                decoded += bytes[segment..<position]
                try escape(into: &decoded)
                segment = position
            case 0..<0x20:
                throw JSONSyntaxError(
                    "a control character (U+\(Self.hex(UInt32(byte)))) must be escaped in a string", offset: position)
            default:
                position += 1
            }
        }
    }

    /// One escape sequence, from its backslash, appended as UTF-8.
    private mutating func escape(into decoded: inout [UInt8]) throws(JSONSyntaxError) {
        let start = position
        position += 1
        guard let letter = peek() else { throw JSONSyntaxError("a string is not closed", offset: start) }
        position += 1
        let simple: UInt8? =
            switch letter {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): letter
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple { return decoded.append(simple) }
        guard letter == UInt8(ascii: "u") else {
            throw JSONSyntaxError("unknown escape '\\\(Self.describeCharacter(letter))' in a string", offset: start)
        }
        var value = try hexQuad(escapeAt: start)
        if (0xD800..<0xDC00).contains(value) {
            // A high surrogate: a low one must follow, as \uDC00–\uDFFF.
            let low = position
            guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                bytes[position + 1] == UInt8(ascii: "u")
            else {
                throw JSONSyntaxError(
                    "lone surrogate '\\u\(Self.hex(value))' in a string (not followed by a low surrogate)",
                    offset: start)
            }
            position += 2
            let second = try hexQuad(escapeAt: low)
            guard (0xDC00..<0xE000).contains(second) else {
                throw JSONSyntaxError(
                    "lone surrogate '\\u\(Self.hex(value))' in a string (followed by '\\u\(Self.hex(second))')",
                    offset: start)
            }
            value = 0x10000 + ((value - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00..<0xE000).contains(value) {
            throw JSONSyntaxError(
                "lone surrogate '\\u\(Self.hex(value))' in a string (no high surrogate before it)", offset: start)
        }
        decoded += Array(String(Unicode.Scalar(value)!).utf8)
    }

    /// The four hex digits of a `\u` escape that starts at `start`.
    private mutating func hexQuad(escapeAt start: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = Self.hexDigit(byte) else {
                throw JSONSyntaxError("'\\u' must be followed by four hex digits", offset: start)
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `'x'` for a printable ASCII byte, `byte 0xC3` otherwise.
    private static func describe(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte)
            ? "'\(describeCharacter(byte))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private static func describeCharacter(_ byte: UInt8) -> String {
        String(UnicodeScalar(byte))
    }

    /// `an array` or `an object`: the innermost open container.
    private static func describe(_ stack: [Container]) -> String {
        stack.last?.isObject == true ? "an object" : "an array"
    }
}
