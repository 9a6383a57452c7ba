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
        let result = data.withUnsafeBytes { raw in
            Result { () throws(JSONSyntaxError) -> JSONValue in
                var parser = JSONParser(bytes: raw.bindMemory(to: UInt8.self))
                return try parser.document(of: data)
            }
        }
        self = try result.get()
    }
}

/// Why some text is not JSON, and where.
package struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong: `expected ',' or ']' after an array element`.
    package var reason: String
    /// The byte offset in the text where it was found, from 0.
    package var offset: Int
    /// Whether the text nests arrays and objects deeper than ``JSONValue/maxDepth``: JSON,
    /// perhaps, but more than is read.
    package var isTooDeep = false

    package init(_ reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// The reason and the offset: `expected ':' after an object key at byte 7`.
    package var description: String { "\(reason) at byte \(offset)" }
}

/// A JSON parser over bytes with an explicit stack of open arrays and objects. It checks the
/// whole text and writes the entries of a ``JSONDocument``; values are decoded from the
/// document when they are read.
struct JSONParser {
    /// The text; valid while the parser is used (inside `withUnsafeBytes`).
    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position = 0
    /// Decoded bytes of the string being checked (escapes), reused.
    private var scratch: [UInt8] = []

    /// An array or object being read.
    private struct Container {
        var isObject: Bool
        /// Where its entries start in `entries`.
        var start: Int
    }

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// A parser that decodes the value at `position` of checked text.
    init(checked bytes: UnsafeBufferPointer<UInt8>, at position: Int) {
        self.bytes = bytes
        self.position = position
    }

    /// The one value of the whole text, whose bytes `data` holds (the document keeps it).
    mutating func document(of data: Data) throws(JSONSyntaxError) -> JSONValue {
        guard bytes.count <= JSONDocument.maximumSize else {
            throw JSONSyntaxError(
                "the text is larger than \(JSONDocument.maximumSize) bytes, the most a JSON value may have", offset: 0)
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        var tape: [UInt32] = []
        // Sized once: growing by doubling would hold up to twice the index, and a copy.
        tape.reserveCapacity(Self.tapeBound(bytes))
        // The entries of the open containers, the innermost last: each closed container moves
        // its own into one block of `tape`.
        var entries: [UInt32] = []
        var stack: [Container] = []
        while true {
            // Read a value, or open a container and go on with its first key or element.
            skipWhitespace()
            guard let byte = peek() else {
                throw JSONSyntaxError(
                    stack.isEmpty ? "no JSON value" : "the text ends inside \(Self.describe(stack))", offset: position)
            }
            var entry = UInt32(position)
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard stack.count < JSONValue.maxDepth else {
                    var error = JSONSyntaxError(
                        "arrays and objects nested deeper than \(JSONValue.maxDepth) levels", offset: position)
                    error.isTooDeep = true
                    throw error
                }
                let isObject = byte == UInt8(ascii: "{")
                position += 1
                skipWhitespace()
                if peek() == UInt8(ascii: isObject ? "}" : "]") {
                    // An empty container is an entry like a scalar's: the offset of its bracket.
                    position += 1
                } else {
                    stack.append(Container(isObject: isObject, start: entries.count))
                    if isObject { entries.append(try key()) }
                    continue
                }
            case UInt8(ascii: "\""):
                try checkString()
            case UInt8(ascii: "t"):
                try literal("true")
            case UInt8(ascii: "f"):
                try literal("false")
            case UInt8(ascii: "n"):
                try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                position = try JSONNumber.scan(bytes, from: position)
            default:
                throw JSONSyntaxError("unexpected \(Self.describe(byte)); expected a JSON value", offset: position)
            }
            // Put the entry into its container; close every container that ends with it.
            while let top = stack.last {
                entries.append(entry)
                skipWhitespace()
                guard let next = peek() else {
                    throw JSONSyntaxError("the text ends inside \(Self.describe(stack))", offset: position)
                }
                position += 1
                if next == UInt8(ascii: ",") {
                    if top.isObject {
                        skipWhitespace()
                        entries.append(try key())
                    }
                    break
                }
                guard next == UInt8(ascii: top.isObject ? "}" : "]") else {
                    let expected =
                        top.isObject ? "',' or '}' after an object member" : "',' or ']' after an array element"
                    throw JSONSyntaxError(
                        "unexpected \(Self.describe(next)); expected \(expected)", offset: position - 1)
                }
                stack.removeLast()
                let block = tape.count
                let count = (entries.count - top.start) / (top.isObject ? 2 : 1)
                tape.append(UInt32(count))
                tape.append(contentsOf: entries[top.start...])
                entries.removeSubrange(top.start...)
                entry = JSONDocument.containerFlag | (top.isObject ? JSONDocument.objectFlag : 0) | UInt32(block)
            }
            if stack.isEmpty {
                skipWhitespace()
                guard position == bytes.count else {
                    throw JSONSyntaxError(
                        "unexpected \(Self.describe(bytes[position])) after the JSON value", offset: position)
                }
                return JSONDocument(data: data, tape: tape).value(of: entry)
            }
        }
    }

    /// At least the number of entries the tape of `bytes` takes: one per `,` and `:` and two
    /// per `[` and `{` outside strings (an element or member after a comma, a key, and a
    /// container's count and first element or member). Linear, one quick pass.
    private static func tapeBound(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var count = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: ","), UInt8(ascii: ":"): count += 1
            case UInt8(ascii: "["), UInt8(ascii: "{"): count += 2
            default: break
            }
        }
        return count
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

    /// An object key and the ':' after it: the entry of the key (its offset).
    private mutating func key() throws(JSONSyntaxError) -> UInt32 {
        guard peek() == UInt8(ascii: "\"") else {
            throw JSONSyntaxError(
                peek().map { "unexpected \(Self.describe($0)); expected an object key in double quotes" }
                    ?? "the text ends inside an object", offset: position)
        }
        let start = position
        try checkString()
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else {
            var reader = JSONParser(checked: bytes, at: start)
            let key = (try? reader.string()) ?? ""
            throw JSONSyntaxError("expected ':' after the object key \(jsonQuoted(key))", offset: position)
        }
        position += 1
        return UInt32(start)
    }

    /// Checks a string, from its opening quote to after its closing one, without making it:
    /// its escapes, its control characters, and that it is UTF-8.
    private mutating func checkString() throws(JSONSyntaxError) {
        let start = position
        position += 1
        var isASCII = true
        while true {
            guard let byte = peek() else { throw JSONSyntaxError("a string is not closed", offset: start) }
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard isASCII || Self.isUTF8(bytes[(start + 1)..<(position - 1)]) else {
                    throw JSONSyntaxError("the string is not valid UTF-8", offset: start)
                }
                return
            case UInt8(ascii: "\\"):
                var decoded = scratch
                scratch = []
                decoded.removeAll(keepingCapacity: true)
                try escape(into: &decoded)
                scratch = decoded
            case 0..<0x20:
                throw JSONSyntaxError(
                    "a control character (U+\(Self.hex(UInt32(byte)))) must be escaped in a string", offset: position)
            default:
                if byte >= 0x80 { isASCII = false }
                position += 1
            }
        }
    }

    /// Whether `bytes` are UTF-8 (escapes are ASCII: they do not change the answer).
    private static func isUTF8(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// A string, from its opening quote to after its closing one.
    mutating func string() throws(JSONSyntaxError) -> String {
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
