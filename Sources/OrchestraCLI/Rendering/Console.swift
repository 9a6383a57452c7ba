#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Standard output, and whether it may carry colours and in-place redraws.
///
/// On a terminal the demo redraws its progress bar in place and colours its output; anywhere
/// else (a pipe, a file, CI) it writes plain lines with no escape codes at all.
struct Console: Sendable {
    /// Whether standard output is a terminal: progress is redrawn in place with `\r`.
    let isTerminal: Bool
    /// Whether ANSI colours are used: only on a terminal, without `--no-color` or `NO_COLOR`.
    let usesColor: Bool
    /// 1 (standard output) or 2 (standard error).
    var descriptor: Int32 = 1

    /// Standard error, for error messages: plain text, no colours.
    static var standardError: Console {
        Console(isTerminal: false, usesColor: false, descriptor: 2)
    }

    static func standardOutput(noColor: Bool) -> Console {
        let isTerminal = isatty(1) == 1
        let colorDisabled = noColor || (getenv("NO_COLOR").map { $0.pointee != 0 } ?? false)
        return Console(isTerminal: isTerminal, usesColor: isTerminal && !colorDisabled)
    }

    /// Writes `text` as is, unbuffered, so redraws and lines appear in the order written.
    func write(_ text: String) {
        writeAll(text, to: descriptor)
    }

    /// Writes `text` and a newline.
    func line(_ text: String = "") {
        write(text + "\n")
    }

    /// Back to the start of the line and clear it (for a terminal only).
    static var clearLine: String { "\r\u{1B}[K" }

    /// `text` in `style`, or `text` unchanged when colours are off.
    func paint(_ text: String, _ style: Style) -> String {
        guard usesColor, !text.isEmpty else { return text }
        return "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m"
    }

    enum Style: String {
        case bold = "1"
        case dim = "2"
        case red = "31"
        case green = "32"
        case yellow = "33"
        case blue = "34"
        case magenta = "35"
        case cyan = "36"
    }
}

/// `write(2)` in a loop: a pipe may take fewer bytes than offered, and a signal may interrupt.
private func writeAll(_ text: String, to descriptor: Int32) {
    var text = text
    text.withUTF8 { bytes in
        guard var cursor = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(descriptor, cursor, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            cursor += written
            remaining -= written
        }
    }
}
