import Yams

/// How YAML types a plain (unquoted, untagged) scalar: `null`, `bool`, `int`, `float` or
/// `str`, by the same rules as Yams' default resolver (YAML 1.1: `yes`/`no`, `0x1F`, `0o17`,
/// `1:30`, `.inf`…), without its regular expressions.
///
/// Why: Yams resolves an implicit tag by running its regular expressions every time a node's
/// tag is read. A 100,000-step file spent most of its 6 s there. ``YAMLComposer`` keeps a plain
/// scalar's tag implicit, and it is typed here, in linear time.
enum YAMLScalarType {
    /// The tag of a scalar as written: its explicit tag (a quoted scalar is `str`), or the type
    /// of its text if it has none.
    static func tag(of scalar: Node.Scalar) -> Tag.Name {
        let written = Tag.Name(rawValue: scalar.tag.rawValue)
        return written == .implicit ? tag(ofPlain: scalar.string) : written
    }

    /// The type of plain scalar text; in the default resolver's order (bool, int, float,
    /// null). Timestamps and the other YAML 1.1 types are text here.
    static func tag(ofPlain text: String) -> Tag.Name {
        if booleans.contains(text) { return .bool }
        let bytes = Array(text.utf8)
        if isInteger(bytes[...]) { return .int }
        if isFloat(bytes[...]) { return .float }
        if nulls.contains(text) { return .null }
        return .str
    }

    private static let booleans: Set<String> = [
        "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON",
        "off", "Off", "OFF",
    ]
    private static let nulls: Set<String> = ["~", "null", "Null", "NULL", ""]

    private typealias Bytes = ArraySlice<UInt8>

    /// `[-+]?0b[01_]+ | [-+]?0o?[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ |
    /// [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`
    private static func isInteger(_ text: Bytes) -> Bool {
        let rest = droppingSign(text)
        guard let first = rest.first else { return false }
        if first == zero {
            let after = rest.dropFirst()
            guard let marker = after.first else { return true }  // "0"
            switch marker {
            case UInt8(ascii: "b"):
                return after.count > 1
                    && after.dropFirst().allSatisfy { $0 == zero || $0 == zero + 1 || $0 == underscore }
            case UInt8(ascii: "x"):
                return after.count > 1 && after.dropFirst().allSatisfy { isHexDigit($0) || $0 == underscore }
            case UInt8(ascii: "o"): return after.count > 1 && after.dropFirst().allSatisfy(isOctalDigitOrUnderscore)
            default: return after.allSatisfy(isOctalDigitOrUnderscore)
            }
        }
        guard (zero + 1...zero + 9).contains(first) else { return false }
        guard let colon = rest.firstIndex(of: UInt8(ascii: ":")) else { return rest.allSatisfy(isDigitOrUnderscore) }
        return rest[..<colon].allSatisfy(isDigitOrUnderscore) && isSexagesimalTail(rest[colon...])
    }

    /// `[-+]?[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)? | \.[0-9_]+([eE][-+][0-9]+)? |
    /// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)`
    private static func isFloat(_ text: Bytes) -> Bool {
        if ["nan", "NaN", "NAN"].contains(where: { text.elementsEqual(".\($0)".utf8) }) { return true }
        if text.first == dot, isDotFraction(text.dropFirst()) { return true }
        let rest = droppingSign(text)
        if ["inf", "Inf", "INF"].contains(where: { rest.elementsEqual(".\($0)".utf8) }) { return true }
        guard let first = rest.first, isDigit(first) else { return false }
        // The integer part: [0-9][0-9_]*
        var index = rest.index(after: rest.startIndex)
        while index < rest.endIndex, isDigitOrUnderscore(rest[index]) { index += 1 }
        if index < rest.endIndex, rest[index] == UInt8(ascii: ":") {
            // Sexagesimal: (:[0-5]?[0-9])+ then \.[0-9_]*
            guard let dotIndex = rest[index...].firstIndex(of: dot) else { return false }
            return isSexagesimalTail(rest[index..<dotIndex]) && rest[(dotIndex + 1)...].allSatisfy(isDigitOrUnderscore)
        }
        // (\.[0-9_]*)?
        if index < rest.endIndex, rest[index] == dot {
            index += 1
            while index < rest.endIndex, isDigitOrUnderscore(rest[index]) { index += 1 }
        }
        // ([eE][-+]?[0-9]+)?
        guard index < rest.endIndex else { return true }
        guard rest[index] == UInt8(ascii: "e") || rest[index] == UInt8(ascii: "E") else { return false }
        let exponent = droppingSign(rest[(index + 1)...])
        return !exponent.isEmpty && exponent.allSatisfy(isDigit)
    }

    /// After the dot of `\.[0-9_]+([eE][-+][0-9]+)?`.
    private static func isDotFraction(_ text: Bytes) -> Bool {
        let exponentStart = text.firstIndex { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") } ?? text.endIndex
        let fraction = text[..<exponentStart]
        guard !fraction.isEmpty, fraction.allSatisfy(isDigitOrUnderscore) else { return false }
        guard exponentStart < text.endIndex else { return true }
        let exponent = text[(exponentStart + 1)...]
        guard let sign = exponent.first, sign == plus || sign == minus else { return false }
        let digits = exponent.dropFirst()
        return !digits.isEmpty && digits.allSatisfy(isDigit)
    }

    /// `(:[0-5]?[0-9])+`, starting at a colon.
    private static func isSexagesimalTail(_ text: Bytes) -> Bool {
        guard text.first == UInt8(ascii: ":") else { return false }
        var groups = text.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false).dropFirst()
        guard !groups.isEmpty else { return false }
        while let group = groups.popFirst() {
            switch group.count {
            case 1: guard isDigit(group.first!) else { return false }
            case 2: guard (zero...zero + 5).contains(group.first!), isDigit(group.last!) else { return false }
            default: return false
            }
        }
        return true
    }

    private static func droppingSign(_ text: Bytes) -> Bytes {
        text.first == plus || text.first == minus ? text.dropFirst() : text
    }

    private static let zero = UInt8(ascii: "0")
    private static let underscore = UInt8(ascii: "_")
    private static let dot = UInt8(ascii: ".")
    private static let plus = UInt8(ascii: "+")
    private static let minus = UInt8(ascii: "-")
    private static func isDigit(_ byte: UInt8) -> Bool { (zero...zero + 9).contains(byte) }
    private static func isDigitOrUnderscore(_ byte: UInt8) -> Bool { isDigit(byte) || byte == underscore }
    private static func isOctalDigitOrUnderscore(_ byte: UInt8) -> Bool {
        (zero...zero + 7).contains(byte) || byte == underscore
    }
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}
