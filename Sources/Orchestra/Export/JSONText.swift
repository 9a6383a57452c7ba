/// `duration` in microseconds, as a JSON number with up to six decimals.
package func jsonMicroseconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    let remainder = (attoseconds / 1_000_000) % 1_000_000  // picoseconds → fraction of a µs
    return remainder == 0 ? "\(micros)" : "\(micros).\(String(remainder + 1_000_000).dropFirst())"
}

/// `text` as a JSON string literal, quotes included: the one JSON string writer of every
/// module (traces, workflow values, messages).
package func jsonQuoted(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}

extension String {
    /// Every occurrence of `target` replaced by `replacement` (Foundation's
    /// `replacingOccurrences` without Foundation).
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
