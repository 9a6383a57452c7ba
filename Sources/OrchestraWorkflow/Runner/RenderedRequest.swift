import Foundation
import HTTPTypes

/// A request with every template replaced, ready to send.
struct RenderedRequest: Sendable {
    var request: HTTPRequest
    var body: Data?
    /// The URL as sent: ASCII only (``URLCheck/escaped(_:)``).
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
    /// - Throws: ``StepFailure`` for a URL that cannot be sent (a capture made it invalid) or a
    ///   header value with a line break.
    init(_ template: RequestTemplate, values: TemplateValues, basicAuth: BasicAuth? = nil) throws(StepFailure) {
        let written: String
        do {
            written = try template.url.render(for: .url, with: values)
        } catch {
            throw StepFailure("\(error)")
        }
        if let problem = URLCheck.problem(with: written) {
            throw StepFailure("the URL '\(short: written)' \(short: problem)", url: written)
        }
        let url = URLCheck.escaped(written)
        let (scheme, authority, path) = Self.split(url)
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
        if let basic = template.basicAuth ?? basicAuth, request.headerFields[.authorization] == nil {
            request.headerFields[.authorization] = try Self.basicCredentials(basic, values: values, url: url)
        }
        switch template.body {
        case nil:
            body = nil
        case .text(let text):
            do {
                body = Data(try text.render(for: .text, with: values).utf8)
            } catch {
                throw StepFailure("\(error)", url: url)
            }
            if !hasContentType { request.headerFields[.contentType] = "text/plain; charset=utf-8" }
        case .json(let json):
            do {
                body = Data(try json.render(with: values).text.utf8)
            } catch {
                throw StepFailure("\(error)", url: url)
            }
            if !hasContentType { request.headerFields[.contentType] = "application/json" }
        }
        self.request = request
        self.url = url
        self.authority = authority
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
        return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// `http://host:8080/a/b?c#frag` → (`http`, `host:8080`, `/a/b?c`). The URL was checked.
    static func split(_ url: String) -> (scheme: String, authority: String, path: String) {
        let schemeEnd = url.range(of: "://")!
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        var rest = url[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = String(rest[..<authorityEnd])
        if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        var path = String(rest[authorityEnd...])
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        return (scheme, authority, path)
    }
}

/// Why a step failed, as the report says it.
struct StepFailure: Error, Sendable, CustomStringConvertible {
    var message: String
    /// The URL, if the request got that far.
    var url: String?

    init(_ message: String, url: String? = nil) {
        self.message = message
        self.url = url
    }

    var description: String { message }
}
