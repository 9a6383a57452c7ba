import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import OrchestraWorkflow

/// `orchestra run --verbose`: every request as sent and its response, on stderr, one block
/// per exchange written at once (so concurrent requests never interleave), secrets redacted:
///
/// ```
/// * login · 12 ms
/// > POST http://127.0.0.1:8080/login
/// > Content-Type: application/json
/// > Authorization: ***
/// >
/// > {"user":"ada","password":"***"}
/// < 200 OK
/// < Content-Type: application/json
/// <
/// < {"access_token":"…"}
/// ```
///
/// Text bodies are shown up to ``bodyLimit`` bytes; other bodies as their size and type.
/// Each attempt, redirect hop, login and refresh is its own block.
struct VerboseLog: Sendable {
    /// How much of a text body is shown.
    static let bodyLimit = 2_048

    let redactor: Redactor
    let console: Console
    /// Held while a block is written, and only then: one `write(2)` of more than 4 KiB to a
    /// pipe may be split and interleaved with another's. It counts the blocks written (a lock
    /// over `Void` drew a false ThreadSanitizer report: its zero-sized state has no address of
    /// its own).
    private let written = Locked(0)

    init(redactor: Redactor, console: Console) {
        self.redactor = redactor
        self.console = console
    }

    func write(_ exchange: HTTPExchange) {
        let block = text(of: exchange)
        written.withLock { count in
            console.write(block)
            count += 1
        }
    }

    /// The block for `exchange`, ending with a blank line.
    func text(of exchange: HTTPExchange) -> String {
        var lines = ["* \(TerminalText.safe(exchange.label)) · \(Format.milliseconds(exchange.duration))"]
        let request = exchange.request
        let url = redactor.redact("\(request.scheme ?? "http")://\(request.authority ?? "")\(request.path ?? "")")
        lines.append("> \(request.method.rawValue) \(TerminalText.safe(url))")
        lines += headers(request.headerFields, prefix: ">")
        switch exchange.body {
        case .file(let file):
            // Streamed from the file, never in memory: its name and size.
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue
            lines += [
                ">", "> [the file \(TerminalText.quoted(file.path))\(size.map { ", \(Format.bytes($0))" } ?? "")]",
            ]
        case .data(let data):
            lines += body(data, type: request.headerFields[.contentType], prefix: ">")
        case nil:
            break
        }
        if let response = exchange.response {
            lines.append("< \(response.status.code) \(TerminalText.safe(response.status.reasonPhrase))")
            lines += headers(response.headerFields, prefix: "<")
            lines += body(exchange.responseBody, type: response.headerFields[.contentType], prefix: "<")
        } else {
            lines.append("! \(TerminalText.safe(redactor.redact(exchange.error ?? "no response")))")
        }
        return lines.joined(separator: "\n") + "\n\n"
    }

    private func headers(_ fields: HTTPFields, prefix: String) -> [String] {
        fields.map { field in
            "\(prefix) \(field.name.rawName): \(TerminalText.safe(redactor.redact(header: field.name, value: field.value)))"
        }
    }

    /// `>` then the body's lines, or its size and type; nothing for an empty body.
    private func body(_ data: Data?, type: String?, prefix: String) -> [String] {
        guard let data, !data.isEmpty else { return [] }
        guard Self.isText(data, type: type) else {
            let kind = type.map { ", \(TerminalText.safe($0))" } ?? ""
            return [prefix, "\(prefix) [\(Format.bytes(data.count))\(kind)]"]
        }
        // Decoded by its charset (HTTPBodyText), masked, then cut (a secret that straddles the
        // limit is masked whole): the limit plus the longest form of a secret is read. A
        // character cut at the end shows as U+FFFD.
        let window = data.prefix(Self.bodyLimit + redactor.longestMatch)
        let decoded = HTTPBodyText(decoding: window, contentType: type)
        let (text, isCut) = redactor.redactedPrefix(of: decoded.text, limit: Self.bodyLimit, in: .bytes)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            "\(prefix) \(TerminalText.safe(String($0)))"
        }
        if data.count > Self.bodyLimit || isCut {
            lines.append("\(prefix) … (\(Format.bytes(data.count)) in all)")
        }
        if let note = decoded.note { lines.append("\(prefix) [\(TerminalText.safe(note))]") }
        return [prefix] + lines
    }

    /// Whether a body is shown as text: a textual type, or no type and either a UTF-16 byte
    /// order mark or no NUL byte in its start.
    static func isText(_ data: Data, type: String?) -> Bool {
        guard let type = type?.lowercased() else {
            return data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF])
                || !data.prefix(bodyLimit).contains(0)
        }
        return type.hasPrefix("text/") || type.contains("json") || type.contains("xml")
            || type.contains("x-www-form-urlencoded") || type.contains("javascript") || type.contains("yaml")
    }
}
