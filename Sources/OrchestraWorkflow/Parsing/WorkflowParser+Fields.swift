import HTTPTypes
import Yams

extension WorkflowParser {
    /// A JSON body written as YAML: mappings, lists and scalars typed as YAML types them
    /// (quoted text stays text). Numbers keep their text when it is JSON (`1.0`, `-0.0`,
    /// `1e400`, `12345678901234567890`); YAML-only spellings (`0x1F`, `+1`, `.5`) become their
    /// value. Mappings keep their order.
    ///
    /// Iterative (an explicit stack), and at most ``JSONValue/maxDepth`` levels deep. Returns
    /// `nil` only after recording an error, so a body is never silently dropped.
    mutating func json(_ root: Node, step: String?, field: String, variablesOnly: Bool) -> JSONTemplate? {
        /// A list or mapping being read: its children, and the values read so far.
        struct Container {
            var isObject: Bool
            var children: [(key: String, field: String, node: Node)]
            var values: [JSONTemplate] = []
        }
        var stack: [Container] = []
        var node = root
        var nodeField = field
        while true {
            var value: JSONTemplate
            switch node {
            case .scalar:
                guard let scalar = jsonScalar(node, step: step, field: nodeField, variablesOnly: variablesOnly) else {
                    return nil
                }
                value = scalar
            case .sequence, .mapping:
                guard stack.count < JSONValue.maxDepth else {
                    reader.fail(
                        .invalidValue, "lists and mappings nested deeper than \(JSONValue.maxDepth) levels", at: node,
                        step: step, field: nodeField)
                    return nil
                }
                var container: Container
                if case .sequence(let sequence) = node {
                    container = Container(
                        isObject: false,
                        children: sequence.enumerated().map { ("", "\(nodeField)[\($0.offset)]", $0.element) })
                } else {
                    let hint = NodeReader.templateHint(node)
                    guard hint.isEmpty else {
                        reader.fail(
                            .invalidTemplate, "an unquoted template\(hint)", at: node, step: step, field: nodeField)
                        return nil
                    }
                    guard let entries = reader.freeEntries(node, step: step, field: nodeField) else { return nil }
                    container = Container(
                        isObject: true, children: entries.map { ($0.key, "\(nodeField).\($0.key)", $0.node) })
                }
                if let first = container.children.first {
                    stack.append(container)
                    (node, nodeField) = (first.node, first.field)
                    continue
                }
                value = container.isObject ? .object([]) : .array([])
            }
            // Put the value into its container; close every container it completes.
            while let top = stack.indices.last {
                stack[top].values.append(value)
                let next = stack[top].values.count
                if next < stack[top].children.count {
                    (node, nodeField) = (stack[top].children[next].node, stack[top].children[next].field)
                    break
                }
                let done = stack.removeLast()
                value =
                    done.isObject ? .object(zip(done.children, done.values).map { ($0.key, $1) }) : .array(done.values)
            }
            if stack.isEmpty { return value }
        }
    }

    /// A scalar of a JSON body: null, a boolean, a number, or text (a template).
    private mutating func jsonScalar(_ node: Node, step: String?, field: String, variablesOnly: Bool) -> JSONTemplate? {
        guard case .scalar(let scalar) = node else { return nil }
        switch node.tagName {
        case .null:
            return .null
        case .bool:
            guard let value = node.bool else { break }
            return .bool(value)
        case .int, .float:
            if let value = JSONValue(numberText: scalar.string) {
                switch value {
                case .integer(let integer): return .integer(integer)
                case .number(let number): return .number(number)
                default: break
                }
            }
            // A YAML spelling JSON does not have: its value, when JSON can write it.
            if node.tagName == .int, let integer = node.int { return .integer(integer) }
            if node.tagName == .float, let double = node.float, let number = JSONNumber(double) {
                return .number(number)
            }
        default:
            return site(node, step: step, field: field, variablesOnly: variablesOnly).map(JSONTemplate.string)
        }
        let hint =
            node.tagName == .int
            ? "; write it in decimal digits (any size), or quote it to send text" : "; quote it to send text"
        reader.fail(
            .invalidValue,
            "'\(short: scalar.string)' is not a JSON \(node.tagName == .bool ? "boolean" : "number")\(hint)", at: node,
            step: step, field: field)
        return nil
    }

    /// `for_each:`: a quoted template that is exactly one `{{STEP.CAPTURE}}`, remembered as a
    /// site so the checker finds its step and capture (and the step depends on it).
    mutating func forEach(_ node: Node, step: String) -> Template.Reference? {
        let example = "as in for_each: \"{{album.images}}\""
        guard case .scalar(let scalar) = node, scalar.style == .doubleQuoted || scalar.style == .singleQuoted else {
            reader.fail(
                .invalidValue,
                "must be a quoted {{STEP.CAPTURE}} naming a list another step captured, \(example); got \(NodeReader.describe(node))\(NodeReader.templateHint(node))",
                at: node, step: step, field: "for_each"
            )
            return nil
        }
        guard let template = reader.template(node, step: step, field: "for_each") else { return nil }
        guard let reference = template.soleReference, reference.isCapture else {
            let found =
                template.references.isEmpty
                ? "no template" : MessageValue.shortened(template.references.map(\.description).joined(separator: " "))
            reader.fail(
                .invalidTemplate,
                "'\(short: template.source)' must be exactly one {{STEP.CAPTURE}} naming a list another step captured, \(example) (found \(found))",
                at: node, step: step, field: "for_each"
            )
            return nil
        }
        guard reference.filters.isEmpty else {
            reader.fail(
                .invalidTemplate,
                "'\(short: template.source)': filters change a value that is inserted into text; for_each takes the list itself, \(example)",
                at: node, step: step, field: "for_each"
            )
            return nil
        }
        guard !reference.isRaw else {
            reader.fail(
                .invalidTemplate,
                "'\(short: template.source)': '| raw' only changes how a value is inserted into a URL; for_each takes the list itself, \(example)",
                at: node, step: step, field: "for_each"
            )
            return nil
        }
        sites.append(
            TemplateSite(
                template: template, step: step, field: "for_each", location: NodeReader.location(node),
                variablesOnly: false))
        return reference
    }

    mutating func captures(_ node: Node, step: String) -> [Capture] {
        guard let entries = reader.freeEntries(node, step: step, field: "captures") else { return [] }
        return entries.compactMap { name, keyNode, value in
            let field = "captures.\(name)"
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                reader.fail(
                    .invalidValue, "capture name '\(short: name)' may use only letters, digits, '_' and '-'",
                    at: keyNode, step: step, field: field)
                return nil
            }
            guard let source = captureSource(value, step: step, field: field) else { return nil }
            return Capture(name: name, source: source, location: NodeReader.location(keyNode))
        }
    }

    /// A capture's value: `$.path` into the JSON body, `{ header: NAME }` or `{ regex: "…" }`.
    mutating func captureSource(_ node: Node, step: String?, field: String) -> Capture.Source? {
        guard case .mapping = node else {
            guard let text = reader.string(node, step: step, field: field) else { return nil }
            do {
                return .body(try CapturePath(parsing: text))
            } catch {
                let hint = text.hasPrefix("$") ? "" : "; a response header is captured with { header: NAME }"
                reader.fail(.invalidCapturePath, error.message + hint, at: node, step: step, field: field)
                return nil
            }
        }
        guard let entries = reader.entries(node, allowed: ["header", "regex"], step: step, field: field) else {
            return nil
        }
        guard entries.count == 1, let entry = entries.first else {
            let kinds = "a capture is $.path into the JSON body, { header: NAME } or { regex: \"…\" }"
            reader.fail(
                entries.isEmpty ? .missingField : .invalidValue,
                entries.isEmpty ? "missing 'header' or 'regex': \(kinds)" : "\(kinds): give one of them", at: node,
                step: step, field: field)
            return nil
        }
        if entry.key == "regex" {
            let regexField = "\(field).regex"
            guard let pattern = reader.string(entry.node, step: step, field: regexField) else { return nil }
            do {
                _ = try BoundedRegex(pattern)
            } catch {
                reader.fail(
                    .invalidValue, "'\(short: pattern)' is not a regular expression: \(error)", at: entry.node,
                    step: step, field: regexField)
                return nil
            }
            return .regex(pattern)
        }
        let headerField = "\(field).header"
        guard let text = reader.string(entry.node, step: step, field: headerField) else { return nil }
        guard let name = HTTPField.Name(text) else {
            reader.fail(
                .invalidValue,
                "'\(short: text)' is not a header name (letters, digits and !#$%&'*+-.^_`|~, no spaces or ':')",
                at: entry.node, step: step, field: headerField)
            return nil
        }
        return .header(name)
    }

    mutating func statusCode(_ node: Node, step: String?, field: String) -> Int? {
        let problem = "must be an HTTP status (100–599), got"
        guard case .scalar(let scalar) = node, node.tagName == .int, let code = node.int else {
            reader.fail(.invalidValue, "\(problem) \(NodeReader.describe(node))", at: node, step: step, field: field)
            return nil
        }
        guard (100...599).contains(code) else {
            reader.fail(.invalidValue, "\(problem) '\(short: scalar.string)'", at: node, step: step, field: field)
            return nil
        }
        return code
    }

    mutating func retry(_ node: Node, step: String) -> RetrySettings? {
        if case .scalar = node {
            return reader.integer(node, minimum: 1, step: step, field: "retry", what: "a number of attempts").map {
                RetrySettings(attempts: $0)
            }
        }
        guard
            let entries = reader.entries(
                node, allowed: ["attempts", "backoff", "max_delay"], step: step, field: "retry")
        else {
            return nil
        }
        var settings = RetrySettings(attempts: 3)
        for (key, value) in entries {
            switch key {
            case "attempts":
                settings.attempts =
                    reader.integer(value, minimum: 1, step: step, field: "retry.attempts", what: "a number of attempts")
                    ?? settings.attempts
            case "max_delay":
                settings.maxDelay =
                    reader.duration(
                        value, step: step, field: "retry.max_delay", allowZero: true,
                        maximum: RetrySettings.maximumMaxDelay) ?? settings.maxDelay
            default:
                settings.backoff =
                    reader.duration(
                        value, step: step, field: "retry.backoff", allowZero: true,
                        maximum: RetrySettings.maximumBackoff) ?? settings.backoff
            }
        }
        return settings
    }

    // MARK: - Auth

    mutating func auth(_ node: Node) -> WorkflowAuth? {
        guard let fields = reader.entries(node, allowed: Self.authFields, step: nil, field: "auth") else { return nil }
        guard let loginNode = fields.first(where: { $0.key == "login" })?.node else {
            reader.fail(
                .missingField, "an auth block needs 'login': the request that returns a token", at: node,
                field: "auth.login")
            return nil
        }
        guard let login = tokenRequest(loginNode, field: "auth.login") else { return nil }
        var auth = WorkflowAuth(
            login: login, refresh: nil, header: "Authorization", scheme: "Bearer", failureStatuses: [401],
            failureBodyContains: nil, location: NodeReader.location(node)
        )
        for (key, value) in fields {
            switch key {
            case "refresh": auth.refresh = tokenRequest(value, field: "auth.refresh")
            case "header":
                guard let name = reader.string(value, step: nil, field: "auth.header") else { break }
                if HTTPField.Name(name) != nil {
                    auth.header = name
                } else {
                    reader.fail(
                        .invalidValue, "'\(short: name)' is not a valid header name", at: value, field: "auth.header")
                }
            case "scheme": auth.scheme = reader.string(value, step: nil, field: "auth.scheme") ?? auth.scheme
            case "failure": failure(value, into: &auth)
            default: break
            }
        }
        return auth
    }

    private mutating func failure(_ node: Node, into auth: inout WorkflowAuth) {
        guard
            let entries = reader.entries(node, allowed: ["status", "body_contains"], step: nil, field: "auth.failure")
        else { return }
        let statuses = entries.first { $0.key == "status" }.map { entry in
            reader.list(entry.node).compactMap { statusCode($0, step: nil, field: "auth.failure.status") }
        }
        let contains = entries.first { $0.key == "body_contains" }.flatMap { entry in
            reader.string(entry.node, step: nil, field: "auth.failure.body_contains")
        }
        auth.failureBodyContains = contains
        // Only a body test given: it decides whatever the status.
        auth.failureStatuses = statuses ?? (contains == nil ? [401] : [])
    }

    private mutating func tokenRequest(_ node: Node, field: String) -> TokenRequest? {
        guard let fields = reader.entries(node, allowed: Self.tokenRequestFields, step: nil, field: field) else {
            return nil
        }
        guard fields.contains(where: { $0.key == "url" }) else {
            reader.fail(.missingField, "missing 'url'", at: node, field: "\(field).url")
            return nil
        }
        guard let tokenNode = fields.first(where: { $0.key == "token" })?.node else {
            reader.fail(
                .missingField,
                "missing 'token': where the token is in the response, as in $.access_token or { header: X-Auth-Token }",
                at: node, field: "\(field).token")
            return nil
        }
        guard var request = request(fields, context: FieldContext(step: nil, prefix: field + ".", variablesOnly: true)),
            let token = captureSource(tokenNode, step: nil, field: "\(field).token")
        else { return nil }
        if !fields.contains(where: { $0.key == "method" }) { request.method = .post }
        let expiresIn = fields.first { $0.key == "expires_in" }.flatMap {
            captureSource($0.node, step: nil, field: "\(field).expires_in")
        }
        return TokenRequest(request: request, token: token, expiresIn: expiresIn, location: NodeReader.location(node))
    }
}
