/// A JSON number exactly as written.
///
/// JSON numbers have no size or precision limit, and `1.0` is not written `1`: a number read
/// from a workflow file or a response keeps its text, so `12345678901234567890`, `1.0`, `-0.0`
/// and `1e400` are sent on exactly as they came. Whole numbers that `Int` holds and that are
/// written the way Swift writes them are ``JSONValue/integer(_:)`` instead; every other number
/// is a `JSONNumber` in `JSONValue.number(_:)`.
///
/// Two numbers are equal when their text is: `1.0` and `1.00` differ, as they do on the wire.
/// Compare ``doubleValue`` to compare values.
///
/// ```swift
/// let big = JSONNumber("12345678901234567890")!
/// big.text            // "12345678901234567890"
/// big.doubleValue     // 1.2345678901234567e+19 (the nearest Double)
/// JSONNumber("1e400")!.doubleValue    // +infinity
/// JSONNumber("01")                    // nil: not a JSON number
/// ```
package struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number's JSON text, as written.
    package let text: String

    /// `text` if it is a JSON number (RFC 8259: an optional `-`, an integer part without
    /// leading zeros, an optional fraction, an optional exponent), or `nil`.
    package init?(_ text: String) {
        var text = text
        let isNumber = text.withUTF8 { bytes in (try? JSONNumber.scan(bytes, from: 0)) == bytes.count }
        guard isNumber else { return nil }
        self.text = text
    }

    /// `value` as Swift writes it, the shortest text that reads back as the same `Double`
    /// (`0.5`, `1.0`, `1e+20`); `nil` for NaN and the infinities, which JSON cannot write.
    package init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.text = value.description
    }

    /// `value` written in decimal.
    package init(_ value: Int) {
        self.text = String(value)
    }

    /// A number the JSON parser has already read.
    init(validated text: String) {
        self.text = text
    }

    /// Whether it is written without a fraction or an exponent.
    package var isInteger: Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// Its value if it is written as a whole number (``isInteger``) that `Int` holds, or `nil`.
    package var intValue: Int? {
        isInteger ? Int(text) : nil
    }

    /// The nearest `Double`: it may have fewer digits than ``text``, and a number beyond
    /// `Double`'s range is an infinity (`1e400`) or a zero (`1e-400`).
    package var doubleValue: Double {
        // Always a number: the text was checked.
        Double(text) ?? .nan
    }

    package var description: String { text }

    /// The end of the JSON number that starts at `start` in `bytes` (where the number's text
    /// stops; the caller checks what follows).
    ///
    /// - Throws: ``JSONSyntaxError`` naming what is wrong, with its byte offset.
    static func scan(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) throws(JSONSyntaxError) -> Int {
        var position = start
        func isDigit(_ index: Int) -> Bool {
            index < bytes.count && bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9")
        }
        func digits() {
            while isDigit(position) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard isDigit(position) else {
            throw JSONSyntaxError("a number needs a digit after '-'", offset: position)
        }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if isDigit(position) {
                throw JSONSyntaxError("a number cannot have a leading zero", offset: position - 1)
            }
        } else {
            digits()
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard isDigit(position) else { throw JSONSyntaxError("a number needs a digit after '.'", offset: position) }
            digits()
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard isDigit(position) else {
                throw JSONSyntaxError("a number needs a digit in its exponent", offset: position)
            }
            digits()
        }
        return position
    }
}
