import Orchestra

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
    ///
    /// A write that fails (a full disk, a closed pipe) is remembered, not thrown: the run goes
    /// on, nothing more is written to that descriptor, and the command reports ``failure`` at
    /// its end (exit 1), so a lost report is never a silent exit 0.
    func write(_ text: String) {
        guard Self.failures.withLock({ $0[descriptor] == nil }) else { return }
        if let error = writeAll(text, to: descriptor) {
            Self.failures.withLock { failures in
                if failures[descriptor] == nil { failures[descriptor] = error }
            }
        }
    }

    /// Why a write to this console's descriptor failed, if one did (`No space left on
    /// device`): the first failure, for every console of the same descriptor.
    var failure: String? {
        Self.failures.withLock { $0[descriptor] }.map { String(cString: strerror($0)) }
    }

    /// The `errno` of the first failed write per descriptor.
    private static let failures = Locked<[Int32: Int32]>([:])

    /// The error message for each of standard output and error that could not be written
    /// (`cannot write the report to standard output: No space left on device`), for the end
    /// of a command; empty when every write succeeded. Printed on standard error (which may
    /// itself be the one that failed).
    static func writeFailures() -> [String] {
        [(1, "cannot write the report to standard output"), (2, "cannot write to standard error")].compactMap {
            descriptor, what in
            Console(isTerminal: false, usesColor: false, descriptor: descriptor).failure.map { "\(what): \($0)" }
        }
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
