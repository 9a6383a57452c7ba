import Foundation

extension WorkflowParser {
    /// `schema:` of an assertion: the path of a JSON Schema file (relative to the workflow
    /// file's folder), or the schema written inline (a mapping, or `true`/`false`). The schema
    /// is read and checked here, so `validate` reports a wrong keyword with its place: the
    /// line and column of an inline keyword, the file, line, column and JSON pointer of one in
    /// a schema file.
    ///
    /// A quoted template that is exactly one capture (`schema: "{{spec.user}}"`) takes the
    /// schema from an earlier response: it is read and checked when the response is.
    mutating func schema(_ node: Node, step: String, field: String) -> Assertion.Check? {
        switch node {
        case .scalar where node.tagName == .bool:
            return inlineSchema(node, step: step, field: field).map(Assertion.Check.schema)
        case .scalar(let scalar) where scalar.string.contains("{{"):
            guard let template = site(node, step: step, field: field, variablesOnly: false) else { return nil }
            guard let reference = template.soleReference, reference.isCapture else {
                reader.fail(
                    .invalidValue,
                    "a schema from a response is exactly one capture, as in \"{{spec.user}}\", got '\(short: template.source)'",
                    at: node, step: step, field: field)
                return nil
            }
            return .capturedSchema(template)
        case .scalar:
            return schemaFile(node, step: step, field: field).map(Assertion.Check.schema)
        case .mapping, .sequence:
            return inlineSchema(node, step: step, field: field).map(Assertion.Check.schema)
        }
    }

    private mutating func inlineSchema(
        _ node: Node, step: String, field: String, name: String = "inline schema"
    ) -> JSONSchema? {
        guard let template = json(node, step: step, field: field, variablesOnly: true) else { return nil }
        guard template.templates.allSatisfy(\.references.isEmpty),
            let value = try? template.render(with: TemplateValues(variables: [:], environment: [:]))
        else {
            reader.fail(
                .invalidValue, "a schema is read as written: it holds no templates ({{…}})", at: node, step: step,
                field: field)
            return nil
        }
        do {
            return try JSONSchema(value, name: name)
        } catch {
            let place = Self.node(at: error.tokens, in: node) ?? node
            reader.fail(.invalidValue, "schema: \(error)", at: place, step: step, field: field)
            return nil
        }
    }

    private mutating func schemaFile(_ node: Node, step: String, field: String) -> JSONSchema? {
        guard let file = bodyFile(node, step: step, field: field) else { return nil }
        let data: Data
        do {
            data = try Workflow.readInputFile(
                at: file.url.path, file: file.path, kind: "schema file", limit: JSONSchema.maximumFileSize)
        } catch {
            var reason = error.errors.first?.message ?? "cannot be read"
            if reason.hasPrefix("larger than") {
                reason =
                    "is larger than \(Workflow.describeSize(JSONSchema.maximumFileSize)) (the limit for a schema file)"
            }
            reader.fail(
                .invalidValue, "schema file '\(short: file.path)': \(reason)", at: node, step: step, field: field)
            return nil
        }
        if ["yaml", "yml"].contains(file.url.pathExtension.lowercased()) {
            return yamlSchemaFile(data, file: file, step: step, field: field)
        }
        do {
            return try JSONSchema(data: data, name: file.path)
        } catch {
            // The keyword's line and column in the file, when the file reads as YAML (JSON does).
            var place = ""
            if !error.tokens.isEmpty,
                case .document(let document?) = YAMLComposer.compose(String(decoding: data, as: UTF8.self)),
                let mark = Self.node(at: error.tokens, in: document)?.mark
            {
                place = ", line \(mark.line), column \(mark.column)"
            }
            reader.fail(
                .invalidValue, "schema file '\(short: file.path)'\(place): \(error)", at: node, step: step,
                field: field)
            return nil
        }
    }

    /// A schema file written in YAML (`.yaml`, `.yml`), read as an inline schema is: its
    /// problems are reported at their own line and column in that file.
    private mutating func yamlSchemaFile(_ data: Data, file: BodyFile, step: String, field: String) -> JSONSchema? {
        var child = WorkflowParser(
            file: file.path, overrides: [:], environment: [:], directory: file.url.deletingLastPathComponent())
        defer { reader.adopt(child.reader.errors) }
        guard let text = String(validating: data, as: UTF8.self) else {
            child.reader.fail(.unreadable, "is not UTF-8 text", at: SourceLocation?.none, step: step, field: field)
            return nil
        }
        guard let document = child.compose(text) else { return nil }
        guard let root = document else {
            child.reader.fail(
                .invalidValue, "the schema file is empty", at: SourceLocation?.none, step: step, field: field)
            return nil
        }
        return child.inlineSchema(root, step: step, field: field, name: file.path)
    }

    /// The node at the JSON pointer `tokens` in `root`: a mapping's value by its key, a
    /// list's element by its index.
    static func node(at tokens: [String], in root: Node) -> Node? {
        var node = root
        for token in tokens {
            switch node {
            case .mapping(let mapping):
                guard
                    let pair = mapping.first(where: { pair in
                        if case .scalar(let key) = pair.key { key.string == token } else { false }
                    })
                else { return nil }
                node = pair.value
            case .sequence(let sequence):
                guard let index = Int(token), sequence.indices.contains(index) else { return nil }
                node = sequence[index]
            case .scalar:
                return nil
            }
        }
        return node
    }
}
