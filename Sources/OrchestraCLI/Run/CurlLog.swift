import ArgumentParser
import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import OrchestraWorkflow

/// `--curl` and `--curl-unmasked`.
struct CurlOptions: ParsableArguments {
    @Flag(help: "Print each request sent as a curl command on stderr.")
    var curl = false

    @Flag(name: .customLong("curl-unmasked"), help: "--curl with secrets shown, not ***.")
    var curlUnmasked = false

    /// The log the options ask for, or `nil`; its lines carry the TLS settings and the proxy
    /// `transport` and the workflow's `tls:` give the run.
    func log(redactor: Redactor, transport: TransportOptions, tls: WorkflowTLS?) -> CurlLog? {
        guard curl || curlUnmasked else { return nil }
        var log = CurlLog(redactor: curlUnmasked ? nil : redactor, console: .standardError)
        if let settings = try? transport.settings(tls: tls) {
            if let roots = settings.tls.trustedCertificates { log.tlsArguments += ["--cacert", roots.path] }
            if !settings.tls.verifiesCertificates { log.tlsArguments.append("--insecure") }
            if let client = settings.tls.clientCertificate {
                log.tlsArguments += ["--cert", client.certificate.path, "--key", client.key.path]
            }
        }
        // Without --proxy, curl reads the same proxy variables as the run.
        if let proxy = transport.proxy { log.proxyArguments += ["--proxy", proxy] }
        if let noproxy = transport.noproxy { log.proxyArguments += ["--noproxy", noproxy] }
        return log
    }
}

/// `orchestra run --curl`: every request as it was sent (after templates, signing, cookies;
/// each attempt, redirect hop, login and refresh its own), as a `curl` command line that sends
/// it again, on stderr, written as the exchange ends:
///
/// ```
/// # login
/// curl -X POST 'http://127.0.0.1:8080/login' -H 'Content-Type: application/json' --data-binary '{"password":"***"}'
/// ```
///
/// The secrets (`secrets:`, the tokens the auth block learned, the values of `Authorization`,
/// `Proxy-Authorization` and `Cookie`) are `***` unless the log is unmasked. A body is sent
/// with `--data-binary`: as text in single quotes; through `printf` when it holds control
/// characters; a body file as `@file`; a body that is not UTF-8 text or is larger than
/// ``bodyLimit`` is left out with a note (`@body`, to be saved by hand).
struct CurlLog: Sendable {
    /// The largest body written on the command line.
    static let bodyLimit = 64 * 1_024

    /// `nil` when unmasked.
    let redactor: Redactor?
    /// `--cacert`, `--insecure`, `--cert` and `--key` with their values, for an https URL.
    var tlsArguments: [String] = []
    /// `--proxy` and `--noproxy` with their values (a proxy's password is a secret).
    var proxyArguments: [String] = []
    let console: Console
    /// Held while a command is written: a write of more than 4 KiB to a pipe may be split.
    private let written = Locked(0)

    init(redactor: Redactor?, console: Console) {
        self.redactor = redactor
        self.console = console
    }

    /// `observer` followed by `curl`'s ``write(_:)``: what a run reports each exchange to.
    static func observer(
        _ observer: (@Sendable (HTTPExchange) -> Void)?, _ curl: CurlLog?
    ) -> (@Sendable (HTTPExchange) -> Void)? {
        guard let curl else { return observer }
        return { exchange in
            observer?(exchange)
            curl.write(exchange)
        }
    }

    func write(_ exchange: HTTPExchange) {
        let text = "# \(Self.comment(exchange.label))\n\(command(for: exchange.request, body: exchange.body))\n"
        written.withLock { count in
            console.write(text)
            count += 1
        }
    }

    /// The `curl` command line that sends `request` with `body`.
    func command(for request: HTTPRequest, body: HTTPRequestBody?) -> String {
        var words = ["curl"]
        var input: String?
        var note: String?
        let url = "\(request.scheme ?? "http")://\(request.authority ?? "")\(request.path ?? "/")"
        if request.method == .head {
            words.append("--head")
        } else if request.method != .get || body != nil {
            words += ["-X", Self.word(request.method.rawValue)]
        }
        // curl reads `[]{}` in a URL as a glob.
        if url.contains(where: { "[]{}".contains($0) }) { words.append("--globoff") }
        words.append(Self.quoted(masked(url)))
        let connection = (request.scheme == "https" ? tlsArguments : []) + proxyArguments
        words += connection.map { $0.hasPrefix("--") ? $0 : Self.quoted(masked($0)) }
        for field in request.headerFields {
            let value =
                redactor == nil || !Redactor.sensitiveHeaders.contains(field.name)
                ? masked(field.value) : Redactor.mask
            // `Name;` is curl's way of sending a header with an empty value.
            words += ["-H", Self.quoted(value.isEmpty ? "\(field.name.rawName);" : "\(field.name.rawName): \(value)")]
        }
        // What curl adds on its own and the request did not have: none, as sent.
        if request.headerFields[.accept] == nil { words += ["-H", "'Accept:'"] }
        if body != nil, request.headerFields[.contentType] == nil { words += ["-H", "'Content-Type:'"] }
        // A POST, PUT or PATCH without a body goes out with `Content-Length: 0`; curl would send none.
        if body == nil, [.post, .put, .patch].contains(request.method), request.headerFields[.contentLength] == nil {
            words += ["-H", "'Content-Length: 0'"]
        }
        // The transport asks for compressed bodies unless the step says identity: curl too, and
        // decodes them.
        if request.headerFields[.acceptEncoding]?.lowercased() != "identity" { words.append("--compressed") }
        switch body {
        case .file(let file):
            words += ["--data-binary", Self.quoted("@" + file.path)]
        case .data(let data):
            if data.count > Self.bodyLimit {
                words += ["--data-binary", "@body"]
                note = "the body (\(data.count) bytes) is not shown: save it as ./body"
            } else if let text = String(validating: data, as: UTF8.self) {
                let text = masked(text)
                if text.unicodeScalars.contains(where: TerminalText.needsEscape) {
                    input = Self.printf(text)
                    words += ["--data-binary", "@-"]
                } else {
                    words += ["--data-binary", Self.quoted(text)]
                }
            } else {
                words += ["--data-binary", "@body"]
                note = "the body (\(data.count) bytes, not UTF-8 text) is not shown: save it as ./body"
            }
        case nil:
            break
        }
        let line = (input.map { "\($0) | " } ?? "") + words.joined(separator: " ")
        return line + (note.map { "  # \($0)" } ?? "")
    }

    private func masked(_ text: String) -> String {
        redactor?.redact(text) ?? text
    }

    /// `text` as one word for a POSIX shell: as it is when it has only letters, digits and
    /// `_-.:/@%+=,`; else ``quoted(_:)``.
    static func word(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy {
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_-.:/@%+=,".unicodeScalars.contains($0))
            }
        return plain ? text : quoted(text)
    }

    /// `text` as one word for a POSIX shell: in single quotes (`'` as `'\''`); or, when it
    /// holds a character the terminal would act on (a control or a bidirectional control,
    /// ``TerminalText/needsEscape(_:)``), as `"$(printf '…')"`, so that the line shows as
    /// written and still sends it.
    static func quoted(_ text: String) -> String {
        guard !text.unicodeScalars.contains(where: TerminalText.needsEscape) else {
            return "\"$(" + printf(text) + ")\""
        }
        return "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// `printf -- '…'` writing `text` exactly: `\`, `%` and `'` escaped, and the bytes of every
    /// control or bidirectional control character as three octal digits each (so that a digit
    /// after one is not read into it). The `--`: a text that starts with `-` (every multipart
    /// body: `--BOUNDARY`) is otherwise an option to printf, which fails in bash and dash.
    static func printf(_ text: String) -> String {
        var format = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": format += #"\\"#
            case "%": format += "%%"
            case "'": format += #"'\''"#
            case _ where TerminalText.needsEscape(scalar):
                for byte in String(scalar).utf8 {
                    let octal = String(byte, radix: 8)
                    format += "\\" + String(repeating: "0", count: 3 - octal.count) + octal
                }
            default: format.unicodeScalars.append(scalar)
            }
        }
        return "printf -- '" + format + "'"
    }

    /// A label as a shell comment: on one line.
    private static func comment(_ label: String) -> String {
        String(label.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
    }
}
