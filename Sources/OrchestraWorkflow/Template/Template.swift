import Foundation

/// A string with `{{…}}` references: `{{vars.base}}/users/{{login.user_id}}`.
///
/// A reference is `{{vars.NAME}}` (a variable) or `{{STEP.CAPTURE}}` (a value captured from an
/// earlier step's JSON response; the step then runs first). Spaces inside the braces are
/// ignored. `{{STEP.CAPTURE | raw}}` inserts a value into a URL without percent-encoding it.
/// In a `for_each` step, `{{item}}` is the current element, `{{item.a.b[0]}}` a path into it
/// (the capture path language without `$`) and `{{index}}` its 0-based position.
///
/// How a value is inserted depends on where the template is (see ``render(for:with:)``):
/// percent-encoded in URLs, as is in headers and text bodies, JSON-escaped in JSON bodies.
package struct Template: Sendable, Hashable, CustomStringConvertible {
    /// A piece of a template.
    package enum Segment: Sendable, Hashable {
        case literal(String)
        case reference(Reference)
    }

    /// `{{namespace.name}}`: `namespace` is `vars` or a step id; or `{{item…}}` / `{{index}}`
    /// in a `for_each` step (namespace `item` or `index`).
    package struct Reference: Sendable, Hashable, CustomStringConvertible {
        package var namespace: String
        /// The variable or capture name; for `{{item.a[0]}}` the path after `item` (`.a[0]`,
        /// empty for `{{item}}`); empty for `{{index}}`.
        package var name: String
        /// `| raw`: inserted into a URL as is.
        package var isRaw: Bool
        /// For `{{item…}}`: where the value is in the current element.
        package var itemPath: CapturePath?
        /// `| base64`, `| json`…: applied to the value in order, before it is inserted.
        package var filters: [Filter]

        package init(
            namespace: String, name: String, isRaw: Bool = false, itemPath: CapturePath? = nil, filters: [Filter] = []
        ) {
            self.namespace = namespace
            self.name = name
            self.isRaw = isRaw
            self.itemPath = itemPath
            self.filters = filters
        }

        /// Whether it names a variable rather than a capture.
        package var isVariable: Bool { namespace == Template.variablesNamespace }

        /// Whether it is `{{item…}}` or `{{index}}`: the element of a `for_each` step.
        package var isElement: Bool { namespace == Template.itemNamespace || namespace == Template.indexNamespace }

        /// Whether it names an environment variable (`{{env.NAME}}`).
        package var isEnvironment: Bool { namespace == Template.environmentNamespace }

        /// Whether it names a cookie of the run's jar (`{{cookies.NAME}}`).
        package var isCookie: Bool { namespace == Template.cookiesNamespace }

        /// Whether it names a column of the row of a data-driven run (`{{data.COLUMN}}`).
        package var isData: Bool { namespace == Template.dataNamespace }

        /// Whether it names a capture of another step (`{{STEP.CAPTURE}}`).
        package var isCapture: Bool { !isVariable && !isElement && !isEnvironment && !isCookie && !isData }

        /// Whether it names `page`: in a `paginate:` step, its page (`{{page.number}}`,
        /// `{{page.cursor}}`); elsewhere a capture of a step whose id is `page`.
        package var isPage: Bool { namespace == Template.pageNamespace }

        package var description: String {
            let path = isElement ? namespace + name : "\(namespace).\(name)"
            let filters = self.filters.map { " | \($0.rawValue)" }.joined()
            return "{{\(path)\(filters)\(isRaw ? " | raw" : "")}}"
        }
    }

    /// Where a rendered template goes, which decides how values are escaped.
    package enum Context: Sendable {
        /// Percent-encoded as a URL component value, except a reference that starts the URL
        /// (a base URL such as `{{vars.base}}`), one marked `| raw`, and one in the URL's host
        /// or port, inserted as host text once checked (``render(for:with:)``). Those, like the
        /// literal text, are escaped with the whole URL when it is sent: only characters the
        /// URL does not allow, keeping the `%XX` escapes already there.
        case url
        /// Inserted as is: header values, text bodies.
        case text
    }

    /// The namespace of variables: `{{vars.base}}`.
    package static let variablesNamespace = "vars"
    /// The namespace of environment variables, read when the file is loaded: `{{env.API_KEY}}`.
    package static let environmentNamespace = "env"
    /// The row of a data-driven run (`--data rows.csv`): `{{data.email}}`.
    package static let dataNamespace = "data"
    /// The cookies of the run's jar, read when a request is rendered: `{{cookies.session}}`.
    package static let cookiesNamespace = "cookies"
    /// The current element of a `for_each` step: `{{item}}`, `{{item.path}}`.
    package static let itemNamespace = "item"
    /// The 0-based position of the current element of a `for_each` step: `{{index}}`.
    package static let indexNamespace = "index"
    /// The page of a `paginate:` step: `{{page.number}}` (from 1), `{{page.cursor}}`. In a
    /// step without `paginate:`, `{{page.x}}` is a capture of a step whose id is `page`.
    package static let pageNamespace = "page"

    /// The text as written, with the user information of a URL in it masked
    /// (`http://***@host/`, ``URLCheck/maskingUserInfo(_:)``): what reports and messages show
    /// of the template. What is sent is rendered from ``segments``.
    package let source: String
    package let segments: [Segment]

    /// The empty template: no text, no reference (a request's URL before its field is read).
    package static let empty = Template()

    private init() {
        source = ""
        segments = []
    }

    /// Parses `text`.
    ///
    /// - Throws: ``TemplateSyntaxError`` for a `{{` without `}}`, an empty reference, a
    ///   reference that is not `namespace.name`, or an unknown filter.
    package init(parsing text: String) throws(TemplateSyntaxError) {
        let source = URLCheck.maskingUserInfo(text)
        self.source = source
        var segments: [Segment] = []
        var rest = Substring(text)
        while let open = Self.range(of: UInt8(ascii: "{"), in: rest) {
            if open.lowerBound > rest.startIndex { segments.append(.literal(String(rest[..<open.lowerBound]))) }
            guard let close = Self.range(of: UInt8(ascii: "}"), in: rest[open.upperBound...]) else {
                throw TemplateSyntaxError(message: "'{{' without a closing '}}' in \"\(short: source)\"")
            }
            segments.append(
                .reference(try Self.reference(String(rest[open.upperBound..<close.lowerBound]), in: source)))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { segments.append(.literal(String(rest))) }
        self.segments = segments
    }

    /// The first `{{` (or `}}`) in `text`: `brace` twice, found in its UTF-8 bytes (an ASCII
    /// byte always starts a Unicode scalar, so its index slices the text; no Foundation search).
    private static func range(of brace: UInt8, in text: Substring) -> Range<String.Index>? {
        let bytes = text.utf8
        var start = bytes.startIndex
        while let found = bytes[start...].firstIndex(of: brace) {
            let next = bytes.index(after: found)
            if next < bytes.endIndex, bytes[next] == brace { return found..<bytes.index(after: next) }
            start = next
        }
        return nil
    }

    /// The references, in order.
    package var references: [Reference] {
        segments.compactMap { if case .reference(let reference) = $0 { reference } else { nil } }
    }

    /// Whether the template is exactly one reference and nothing else.
    package var soleReference: Reference? {
        if segments.count == 1, case .reference(let reference) = segments[0] { return reference }
        return nil
    }

    package var description: String { source }

    /// The text with every reference replaced by its value, escaped for `context`.
    ///
    /// - Throws: ``TemplateValues/Missing`` if a value is missing (validation prevents it).
    /// In a URL, a value that goes into the host or the port (after `://`, before the next `/`,
    /// `?` or `#`, and not in the user information: `http://{{vars.host}}/x` with
    /// `127.0.0.1:8080`) is host text: inserted as is, not percent-encoded, once checked as a
    /// host (``hostProblem(_:in:endsPort:)``: no `/ ? # @`, a port 1 to 65535, an IPv6 address in
    /// brackets), so that it can neither resolve to another name nor change the URL's structure.
    ///
    /// - Throws: ``TemplateValues/Missing`` if a value is missing (validation prevents it), a
    ///   filter cannot take it, or it goes into a URL's host and is not host text (its
    ///   ``TemplateValues/Missing/reason`` names the value and why).
    package func render(for context: Context, with values: TemplateValues) throws(TemplateValues.Missing) -> String {
        var refused: TemplateValues.Missing?
        let text = try rendered(for: context) { reference throws(TemplateValues.Missing) in
            try values.value(of: reference).interpolated
        } hostRefused: { reference, value, problem in
            guard refused == nil else { return }
            let reason = "goes into the URL's host, and '\(short: value)' is not a host: \(problem)"
            refused = TemplateValues.Missing(reference: reference, reason: reason)
        }
        if let refused { throw refused }
        return text
    }

    /// The text with its variables replaced (escaped for `context`) and every other reference
    /// left as written: how the URL of a `for_each` step, sent once per element, reads in
    /// reports (`http://127.0.0.1:8080{{item.path | raw}}`).
    package func substitutingVariables(_ variables: [String: String], for context: Context) -> String {
        let text = rendered(for: context) { reference in reference.isVariable ? variables[reference.name] : nil }
        return context == .url ? URLCheck.maskingUserInfo(text) : text
    }

    /// The text with each reference replaced by `value(reference)`, escaped for `context`, or
    /// left as written where that is nil.
    /// A value that goes into a URL's host or port and is not host text is inserted as is, and
    /// `hostRefused` gets it with the reason.
    private func rendered<E: Error>(
        for context: Context, value: (Reference) throws(E) -> String?,
        hostRefused: (Reference, String, String) -> Void = { _, _, _ in }
    ) throws(E) -> String {
        var output = ""
        var position = URLPosition()
        for (index, segment) in segments.enumerated() {
            let piece: String
            switch segment {
            case .literal(let text):
                piece = text
            case .reference(let reference):
                guard let value = try value(reference) else {
                    piece = reference.description
                    break
                }
                if context == .url, index > 0, !reference.isRaw,
                    position.isHostOrPort(followedBy: segments[(index + 1)...])
                {
                    if let problem = Self.hostProblem(value, in: position, endsPort: endsAuthority(after: index)) {
                        hostRefused(reference, value, problem)
                    }
                    piece = value
                } else {
                    piece = Self.inserted(value, for: reference, at: index, in: context)
                }
            }
            output += piece
            if context == .url, position.part != .rest { position.feed(piece) }
        }
        return output
    }

    /// Whether the authority ends after the segment at `index`: nothing follows, or a literal
    /// that starts with `/`, `?` or `#`.
    private func endsAuthority(after index: Int) -> Bool {
        guard index + 1 < segments.count else { return true }
        guard case .literal(let text) = segments[index + 1], let first = text.utf8.first else { return false }
        return first == UInt8(ascii: "/") || first == UInt8(ascii: "?") || first == UInt8(ascii: "#")
    }

    /// `value` as `reference`, the segment at `index`, inserts it into `context` (a value in
    /// a URL's host or port is not inserted here).
    private static func inserted(
        _ value: String, for reference: Reference, at index: Int, in context: Context
    ) -> String {
        if context == .text || reference.isRaw || index == 0 { return value }
        // A value whose last filter is `urlencode` is encoded already: encoding it again would
        // send `%2520` for a space.
        return withDotsEncoded(reference.filters.last == .urlencode ? value : percentEncoded(value))
    }

    /// `value`, inserted into a URL, with its dots encoded (`%2E`) if it is made only of dots:
    /// `..` or `.` between two `/` is a dot segment, which a client or server resolves
    /// (`/users/../admin` is `/admin`), so a value would change the URL's structure. Encoded,
    /// it is sent as written, by both transports (`GET /users/%2E%2E/delete`), and reaches the
    /// server as a value. A value with other characters cannot form one (its `/` is encoded),
    /// and a dot segment needs every value in it to be only dots, so this rule covers
    /// `{{a}}{{b}}` too. In a query, where dots mean nothing, the encoded form means the same.
    static func withDotsEncoded(_ value: String) -> String {
        guard !value.isEmpty, value.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) else { return value }
        return String(repeating: "%2E", count: value.utf8.count)
    }

    /// `value` percent-encoded as a URL component: everything but the unreserved characters of
    /// RFC 3986 (`A–Z a–z 0–9 - . _ ~`).
    package static func percentEncoded(_ value: String) -> String {
        // Most values (ids, numbers, slugs) need nothing encoded: one pass over the bytes says
        // so, without Foundation's encoder.
        if value.utf8.allSatisfy(URLCheck.unreservedCharacters.contains) { return value }
        return value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    private static let unreserved = CharacterSet(charactersIn: URLCheck.unreserved)

    private static func reference(_ inner: String, in source: String) throws(TemplateSyntaxError) -> Reference {
        var parts = inner.split(separator: "|", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let path = parts.removeFirst()
        var isRaw = false
        var filters: [Filter] = []
        for name in parts {
            if name == "raw" {
                isRaw = true
            } else if let filter = Filter(rawValue: name) {
                filters.append(filter)
            } else {
                let known = (["raw"] + Filter.allCases.map(\.rawValue)).joined(separator: ", ")
                throw TemplateSyntaxError(
                    message: "unknown filter '\(short: name)' in {{\(short: inner)}}; the filters are \(known)")
            }
        }
        guard !path.isEmpty else {
            throw TemplateSyntaxError(message: "empty reference '{{}}' in \"\(short: source)\"")
        }
        if path == indexNamespace {
            return Reference(namespace: indexNamespace, name: "", isRaw: isRaw, filters: filters)
        }
        if path.hasPrefix(indexNamespace + ".") || path.hasPrefix(indexNamespace + "[") {
            throw TemplateSyntaxError(
                message: "'{{\(short: inner)}}': {{index}} is the element's position, a number with no path")
        }
        if path == itemNamespace || path.hasPrefix(itemNamespace + ".") || path.hasPrefix(itemNamespace + "[") {
            let rest = String(path.dropFirst(itemNamespace.count))
            do {
                let itemPath = try CapturePath(parsing: "$" + rest)
                return Reference(
                    namespace: itemNamespace, name: rest, isRaw: isRaw, itemPath: itemPath, filters: filters)
            } catch {
                throw TemplateSyntaxError(
                    message:
                        "'{{\(short: inner)}}' is not a path into the element: write {{item}}, {{item.key}} or {{item.list[0]}}"
                )
            }
        }
        let names = path.split(separator: ".", omittingEmptySubsequences: false)
        guard names.count == 2, !names[0].isEmpty, !names[1].isEmpty, !path.contains(where: \.isWhitespace) else {
            throw TemplateSyntaxError(
                message: "'{{\(short: inner)}}' is not a reference: write {{vars.NAME}} or {{STEP.CAPTURE}}"
            )
        }
        return Reference(namespace: String(names[0]), name: String(names[1]), isRaw: isRaw, filters: filters)
    }
}

/// A template that cannot be read; the parser adds the file, line, step and field.
package struct TemplateSyntaxError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}

/// What references resolve to while a workflow runs: the variables and the captures of the
/// steps that have succeeded.
package struct TemplateValues: Sendable {
    package var variables: [String: String]
    /// The environment variables the workflow uses (``Workflow/environment``).
    package var environment: [String: String]
    /// Captures by step id, then by capture name.
    package var captures: [String: [String: JSONValue]]
    /// In a `for_each` step: the current element (`{{item}}`).
    package var item: JSONValue?
    /// The row of a data-driven run: `{{data.COLUMN}}`.
    package var data: [String: String] = [:]
    /// Where `{{cookies.NAME}}` is read; `nil` when cookies are off.
    package var cookieJar: CookieJar?
    /// In a `for_each` step: the current element's 0-based position (`{{index}}`).
    package var index: Int?
    /// In a `paginate:` step: the page's number (from 1) and the cursor the previous page gave
    /// (empty on the first page).
    package var page: (number: Int, cursor: String)?
    /// For checking a URL before the run: every capture and element reference stands for
    /// `x` (`/x` when raw).
    var placeholders = false

    package init(
        variables: [String: String] = [:], environment: [String: String] = [:],
        captures: [String: [String: JSONValue]] = [:], item: JSONValue? = nil, index: Int? = nil
    ) {
        self.variables = variables
        self.environment = environment
        self.captures = captures
        self.item = item
        self.index = index
    }

    /// A reference whose value is not there, or that a filter cannot take.
    package struct Missing: Error, Sendable, CustomStringConvertible {
        package var reference: Template.Reference
        /// Why a filter refused the value (`| length` of a number), or why it cannot go where
        /// it goes (a URL's host); `nil` when it is missing.
        package var reason: String?
        package var description: String {
            if let reason { return "\(short: reference): \(reason)" }
            return reference.namespace == Template.itemNamespace
                ? "\(short: reference): the element has no '\(short: reference.name)'"
                : "no value for \(short: reference)"
        }
    }

    /// The value `reference` names, with its filters applied: a variable as a string, a capture
    /// as captured, the element (or the value at its path) and its index as they are.
    package func value(of reference: Template.Reference) throws(Missing) -> JSONValue {
        let value = try unfilteredValue(of: reference)
        do {
            return try Template.Filter.apply(reference.filters, to: value)
        } catch {
            throw Missing(reference: reference, reason: error.reason)
        }
    }

    private func unfilteredValue(of reference: Template.Reference) throws(Missing) -> JSONValue {
        if reference.isVariable || reference.isEnvironment {
            let value = reference.isVariable ? variables[reference.name] : environment[reference.name]
            guard let value else { throw Missing(reference: reference) }
            return .string(value)
        }
        if placeholders { return .string(reference.isRaw ? "/x" : "x") }
        if reference.isData {
            guard let value = data[reference.name] else {
                throw Missing(reference: reference, reason: "this row has no '\(short: reference.name)'")
            }
            return .string(value)
        }
        if reference.isCookie {
            guard let cookieJar else {
                throw Missing(reference: reference, reason: "cookies are off for this step (cookies: false)")
            }
            guard let value = cookieJar.value(named: reference.name) else {
                let names = cookieJar.cookies.map(\.name)
                let holds = names.isEmpty ? "it is empty" : "it holds \(names.joined(separator: ", "))"
                throw Missing(
                    reference: reference,
                    reason: "no cookie '\(short: reference.name)' in the run's jar (\(short: holds))")
            }
            return .string(value)
        }
        if reference.isPage, let page {
            switch reference.name {
            case "number": return .integer(page.number)
            case "cursor": return .string(page.cursor)
            default: throw Missing(reference: reference, reason: "a page has only {{page.number}} and {{page.cursor}}")
            }
        }
        if reference.namespace == Template.indexNamespace {
            guard let index else { throw Missing(reference: reference) }
            return .integer(index)
        }
        if reference.namespace == Template.itemNamespace {
            guard let item, let value = (reference.itemPath ?? CapturePath.whole).evaluate(in: item) else {
                throw Missing(reference: reference)
            }
            return value
        }
        guard let value = captures[reference.namespace]?[reference.name] else { throw Missing(reference: reference) }
        return value
    }
}
