/// `   412 ms  text`, coloured by tone.
enum LogLine {
    static func render(time: Duration, text: String, tone: LogEntry.Tone, console: Console) -> String {
        let stamp = console.paint(Format.right(Format.milliseconds(time), 9), .dim)
        let body: String
        switch tone {
        case .plain: body = text
        case .good: body = console.paint(text, .green)
        case .bad: body = console.paint(text, .red)
        case .attention: body = console.paint(text, .yellow)
        }
        return stamp + "  " + body
    }
}

/// `✓`, `✓ on attempt 3`, `✗ CallbackError.abandoned`.
enum OutcomeMark {
    static func render(_ outcome: Outcome?, console: Console) -> String {
        guard let outcome else { return console.paint("…", .dim) }
        let detail = outcome.detail.map { " " + $0 } ?? ""
        return outcome.succeeded
            ? console.paint("✓", .green) + console.paint(detail, .dim)
            : console.paint("✗" + detail, .red)
    }
}
