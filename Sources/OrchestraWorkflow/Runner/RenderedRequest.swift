import Foundation
import HTTPTypes
import OrchestraHTTP

/// A request with every template replaced, ready to send.
struct RenderedRequest: Sendable {
    var request: HTTPRequest
    /// Bytes, or the file of `body_file:` (read as it is sent).
    var body: HTTPRequestBody?
    /// The URL as shown: as sent (ASCII only, ``URLCheck/escaped(_:)``), with its user
    /// information, if it had any, shown as ``URLCheck/maskedUserInfo`` (`http://***@host/`).
    var url: String
    /// `host:port` as written in the URL.
    var authority: String

    /// Renders `template` with `values`.
    ///
    /// The URL is made ASCII here, before any transport sees it: characters its components do
    /// not allow are percent-encoded, escapes already written are kept (a transport given a
    /// non-ASCII URL would escape those escapes again: `São%20Paulo` → `S%C3%A3o%2520Paulo`).
    /// A JSON body is its value's text, numbers as written: nothing is lost or replaced.
    ///
    /// A user information in the URL (`http://user:password@host/`, written or brought by a
    /// value) is sent as `Authorization: Basic base64(user:password)`, percent-decoded, as curl
    /// does, unless the step has an `Authorization` header or its own `basic_auth:` (those
    /// win; the URL's wins over the workflow's `basic_auth:`). It is never in the request
    /// line, nor shown: ``url`` has `***` in its place, and its password (its user when it has
    /// no password) is a secret of the run (``Redactor/learn(_:)``), so an echo of it, or of
    /// the `Authorization` it makes, is masked too. Like every `Authorization`, it is dropped
    /// on a redirect to another origin.
    ///
    /// - Throws: ``StepFailure`` for a URL that cannot be sent (a capture made it invalid),
    ///   user information that basic auth cannot send, or a header value with a line break.
    init(_ template: RequestTemplate, values: TemplateValues, basicAuth: BasicAuth? = nil) throws(StepFailure) {
        let written: String
        do {
            written = try template.url.render(for: .url, with: values)
        } catch {
            throw StepFailure("\(error)")
        }
        let sendable: String
        switch URLCheck.sendable(written) {
        case .success(let url): sendable = url
        case .failure(let refusal):
            let shown = URLCheck.maskingUserInfo(written)
            throw StepFailure("the URL '\(short: shown)' \(short: refusal.reason)", url: shown)
        }
        let credentials: URLCheck.Credentials?
        switch URLCheck.splittingCredentials(sendable) {
        case .success(let split): credentials = split.credentials
        case .failure(let refusal):
            let shown = URLCheck.maskingUserInfo(sendable)
            throw StepFailure("the URL '\(short: shown)' \(short: refusal.reason)", url: shown)
        }
        let url = credentials == nil ? sendable : URLCheck.maskingUserInfo(sendable)
        if let credentials {
            // The password is the secret; an API key given as the user has none.
            Redactor.current?.learn(credentials.password.isEmpty ? credentials.user : credentials.password)
        }
        let (scheme, authority, path) = Self.split(sendable)
        var request = HTTPRequest(method: template.method, scheme: scheme, authority: authority, path: path)
        var hasContentType = false
        for (name, valueTemplate) in template.headers {
            let value: String
            do {
                value = try valueTemplate.render(for: .text, with: values)
            } catch {
                throw StepFailure("\(error)", url: url)
            }
            guard !value.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else {
                throw StepFailure(
                    "header '\(short: name)' would contain a line break (from '\(short: valueTemplate.source)'); refusing to send it",
                    url: url)
            }
            guard let field = HTTPField.Name(name) else {
                throw StepFailure("'\(short: name)' is not a valid header name", url: url)
            }
            request.headerFields.append(HTTPField(name: field, value: value))
            if field == .contentType { hasContentType = true }
        }
        if request.headerFields[.authorization] == nil {
            if let basic = template.basicAuth {
                request.headerFields[.authorization] = try Self.basicCredentials(basic, values: values, url: url)
            } else if let credentials {
                request.headerFields[.authorization] = Self.basicCredentials(credentials)
            } else if let basic = basicAuth {
                request.headerFields[.authorization] = try Self.basicCredentials(basic, values: values, url: url)
            }
        }
        switch template.body {
        case nil:
            body = nil
        case .text(let text):
            do {
                body = .data(Data(try text.render(for: .text, with: values).utf8))
            } catch {
                throw StepFailure("\(error)", url: url)
            }
            if !hasContentType { request.headerFields[.contentType] = "text/plain; charset=utf-8" }
        case .json(let json):
            do {
                body = .data(Data(try json.render(with: values).text.utf8))
            } catch {
                throw StepFailure("\(error)", url: url)
            }
            if !hasContentType { request.headerFields[.contentType] = "application/json" }
        case .form(let fields):
            var pairs: [String] = []
            for field in fields {
                let value: String
                do {
                    value = try field.value.render(for: .text, with: values)
                } catch {
                    throw StepFailure("\(error)", url: url)
                }
                pairs.append(Self.formEncoded(field.name) + "=" + Self.formEncoded(value))
            }
            body = .data(Data(pairs.joined(separator: "&").utf8))
            if !hasContentType { request.headerFields[.contentType] = "application/x-www-form-urlencoded" }
        case .multipart(let parts):
            let boundary = Self.makeBoundary()
            body = .data(try Self.multipart(parts, boundary: boundary, values: values, url: url))
            // The boundary is in the type: a type given in `headers` would not have it.
            request.headerFields[.contentType] = "multipart/form-data; boundary=\(boundary)"
        case .file(let file):
            // Streamed by the transport as it reads the file (checked when the workflow was read).
            body = .file(file.url)
            if !hasContentType { request.headerFields[.contentType] = Self.contentType(ofFile: file.path) }
        }
        self.request = request
        self.url = url
        self.authority = authority
    }

    /// `value` encoded as `application/x-www-form-urlencoded` writes it: letters, digits and
    /// `*-._` as they are, a space as `+`, every other byte as `%XX`.
    static func formEncoded(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                encoded += "+"
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    /// A boundary that does not occur in any part (72 bits of randomness).
    static func makeBoundary() -> String {
        let random = (0..<3).map { _ in String(UInt32.random(in: 0...UInt32.max) & 0xFF_FFFF, radix: 16) }
        return "orchestra-" + random.joined(separator: "-")
    }

    /// A `multipart/form-data` body (RFC 7578): each part's headers, a blank line, its bytes.
    static func multipart(
        _ parts: [MultipartPart], boundary: String, values: TemplateValues, url: String
    ) throws(StepFailure) -> Data {
        var body = Data()
        for part in parts {
            var disposition = "form-data; name=\"\(quotedInDisposition(part.name))\""
            let content: Data
            var type = part.contentType
            if let file = part.file {
                let filename = file.url.lastPathComponent
                disposition += "; filename=\"\(quotedInDisposition(filename))\""
                content = try contents(of: file, field: "multipart '\(short: part.name)'", url: url)
                type = type ?? contentType(ofFile: filename)
            } else {
                do {
                    content = Data(try part.value!.render(for: .text, with: values).utf8)
                } catch {
                    throw StepFailure("\(error)", url: url)
                }
            }
            var head = "--\(boundary)\r\nContent-Disposition: \(disposition)\r\n"
            if let type { head += "Content-Type: \(type)\r\n" }
            body.append(Data((head + "\r\n").utf8))
            body.append(content)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return body
    }

    /// A name inside a quoted `Content-Disposition` parameter, as browsers write it: `"`, CR
    /// and LF percent-encoded.
    private static func quotedInDisposition(_ name: String) -> String {
        name.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    /// The bytes of `file`, read now (it was checked when the workflow was loaded, but may have
    /// changed since).
    static func contents(of file: BodyFile, field: String, url: String) throws(StepFailure) -> Data {
        do {
            return try Data(contentsOf: file.url, options: .mappedIfSafe)
        } catch {
            throw StepFailure(
                "\(field): cannot read '\(short: file.path)': \((error as NSError).localizedDescription)", url: url)
        }
    }

    /// The media type of a file by its extension; `application/octet-stream` when unknown.
    static func contentType(ofFile path: String) -> String {
        let types = [
            "txt": "text/plain; charset=utf-8", "csv": "text/csv", "html": "text/html", "json": "application/json",
            "xml": "application/xml", "yaml": "application/yaml", "yml": "application/yaml", "pdf": "application/pdf",
            "zip": "application/zip", "gz": "application/gzip", "png": "image/png", "jpg": "image/jpeg",
            "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "svg": "image/svg+xml",
        ]
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        return types[ext] ?? "application/octet-stream"
    }

    /// `Basic base64(user:password)` (RFC 7617); a user with a `:` or a line break is refused.
    static func basicCredentials(_ basic: BasicAuth, values: TemplateValues, url: String) throws(StepFailure) -> String
    {
        let user: String
        let password: String
        do {
            user = try basic.user.render(for: .text, with: values)
            password = try basic.password.render(for: .text, with: values)
        } catch {
            throw StepFailure("\(error)", url: url)
        }
        guard !user.contains(":") else {
            throw StepFailure(
                "basic_auth: the user '\(short: user)' contains ':', which basic auth cannot send", url: url)
        }
        guard !(user + password).contains(where: \.isNewline) else {
            throw StepFailure("basic_auth: the user or password contains a line break; refusing to send it", url: url)
        }
        return basicCredentials(URLCheck.Credentials(user: user, password: password))
    }

    /// `Basic base64(user:password)` of credentials already checked.
    static func basicCredentials(_ credentials: URLCheck.Credentials) -> String {
        "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
    }

    /// `http://host:8080/a/b?c#frag` → (`http`, `host:8080`, `/a/b?c`). The URL was checked
    /// and escaped (ASCII): its delimiters are found among its bytes.
    static func split(_ url: String) -> (scheme: String, authority: String, path: String) {
        let bytes = url.utf8
        let colon = bytes.firstIndex(of: UInt8(ascii: ":"))!
        let scheme = url[..<colon].lowercased()
        // "://" follows the scheme.
        var rest = url[bytes.index(colon, offsetBy: 3)...]
        if let hash = rest.utf8.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        let authorityEnd =
            rest.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.utf8.lastIndex(of: UInt8(ascii: "@")) {
            authority = authority[authority.utf8.index(after: at)...]
        }
        let path = rest[authorityEnd...]
        if path.utf8.first == UInt8(ascii: "/") { return (scheme, String(authority), String(path)) }
        return (scheme, String(authority), "/" + path)
    }
}

/// Why a step failed, as the report says it.
struct StepFailure: Error, Sendable, CustomStringConvertible {
    var message: String
    /// The URL, if the request got that far.
    var url: String?
    /// Whether the response came and did not pass the step's checks (its status, `assert:` or
    /// captures), rather than the request failing: an `until:` poll tries again.
    var isCheck = false

    init(_ message: String, url: String? = nil) {
        self.message = message
        self.url = url
    }

    var description: String { message }

    /// A failed check of a response (``isCheck``).
    static func check(_ message: String) -> StepFailure {
        var failure = StepFailure(message)
        failure.isCheck = true
        return failure
    }
}
