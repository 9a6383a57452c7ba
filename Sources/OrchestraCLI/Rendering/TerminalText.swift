import OrchestraWorkflow

/// Text from a file or a server made safe to print on a terminal: control characters and
/// bidirectional overrides are written as visible escapes, so a workflow or a response cannot
/// move the cursor, clear the screen, change colours, or reorder what is shown.
enum TerminalText {
    /// `text` with every C0 and C1 control character, DEL and bidirectional formatting
    /// character (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069) escaped: `\n`, `\r`,
    /// `\t`, or `\u{1B}`. Everything else is kept as it is.
    ///
    /// Complexity: linear in the length of `text`; text that needs nothing is returned as is.
    static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var output = ""
        output.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 16)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                output.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            default: output += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return output
    }

    /// A value quoted in a message (an option's value, a path, a name): its first characters
    /// and its length if it is long (``MessageValue/shortened(_:limit:)``), then made safe.
    static func quoted(_ text: some StringProtocol) -> String {
        safe(MessageValue.shortened(text))
    }

    /// Whether ``safe(_:)`` escapes `scalar`: a control character or a bidirectional control.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
