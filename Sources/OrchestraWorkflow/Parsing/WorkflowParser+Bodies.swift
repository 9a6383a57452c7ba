import Foundation
import Yams

extension WorkflowParser {
    /// The fields that give a request's body: at most one of them per request.
    static let bodyFields = ["body", "form", "multipart", "body_file"]

    /// Whether `request` may take a body from `field`: records an error naming both fields if
    /// another one already gave it.
    mutating func acceptsBody(_ request: RequestTemplate, node: Node, context: FieldContext, field: String) -> Bool {
        guard request.body == nil else {
            reader.fail(
                .invalidValue,
                "a request has one body: give only one of \(Self.bodyFields.joined(separator: ", "))", at: node,
                step: context.step, field: context.name(field))
            return false
        }
        return true
    }

    /// `form: { name: value, … }`: text fields (templates), in file order.
    mutating func form(_ node: Node, context: FieldContext) -> RequestBody? {
        let field = context.name("form")
        guard let entries = reader.freeEntries(node, step: context.step, field: field) else { return nil }
        var fields: [FormField] = []
        for (name, _, value) in entries {
            guard
                let template = site(
                    value, step: context.step, field: "\(field).\(name)", variablesOnly: context.variablesOnly)
            else { continue }
            fields.append(FormField(name: name, value: template))
        }
        return .form(fields)
    }

    /// `multipart:` a list of `{ name, value }` and `{ name, file, content_type }` parts.
    mutating func multipart(_ node: Node, context: FieldContext) -> RequestBody? {
        let field = context.name("multipart")
        guard case .sequence(let sequence) = node, !sequence.isEmpty else {
            reader.fail(
                .invalidValue,
                "must be a list of parts, as in [{ name: title, value: Hi }, { name: upload, file: photo.png }], got \(NodeReader.describe(node))",
                at: node, step: context.step, field: field)
            return nil
        }
        var parts: [MultipartPart] = []
        for (index, partNode) in sequence.enumerated() {
            let partField = "\(field)[\(index)]"
            guard
                let entries = reader.entries(
                    partNode, allowed: ["name", "value", "file", "content_type"], step: context.step, field: partField)
            else { continue }
            let given = Dictionary(entries.map { ($0.key, $0.node) }, uniquingKeysWith: { first, _ in first })
            guard let nameNode = given["name"] else {
                reader.fail(
                    .missingField, "missing 'name': each part has a name", at: partNode, step: context.step,
                    field: "\(partField).name")
                continue
            }
            guard (given["value"] == nil) != (given["file"] == nil) else {
                reader.fail(
                    .invalidValue, "a part has either 'value' (text) or 'file' (a path), not both or neither",
                    at: partNode, step: context.step, field: partField)
                continue
            }
            guard let name = reader.string(nameNode, step: context.step, field: "\(partField).name") else { continue }
            var part = MultipartPart(name: name)
            if let valueNode = given["value"] {
                part.value = site(
                    valueNode, step: context.step, field: "\(partField).value", variablesOnly: context.variablesOnly)
                if part.value == nil { continue }
            }
            if let fileNode = given["file"] {
                guard let file = bodyFile(fileNode, step: context.step, field: "\(partField).file") else { continue }
                part.file = file
            }
            if let typeNode = given["content_type"] {
                part.contentType = reader.string(typeNode, step: context.step, field: "\(partField).content_type")
            }
            parts.append(part)
        }
        return .multipart(parts)
    }

    /// A path to a file that exists and can be read, relative to the workflow file's folder.
    mutating func bodyFile(_ node: Node, step: String?, field: String) -> BodyFile? {
        guard let path = reader.string(node, step: step, field: field) else { return nil }
        let url = (path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path))
            .standardizedFileURL
        var isDirectory: ObjCBool = false
        let problem: String? =
            if path.isEmpty {
                "is empty; give a path to a file"
            } else if !FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
                "no such file '\(short: path)' (looked for \(short: url.path))"
            } else if isDirectory.boolValue {
                "'\(short: path)' is a directory, not a file"
            } else if !FileManager.default.isReadableFile(atPath: url.path) {
                "'\(short: path)' cannot be read"
            } else {
                nil
            }
        if let problem {
            reader.fail(.invalidValue, problem, at: node, step: step, field: field)
            return nil
        }
        return BodyFile(path: path, url: url)
    }
}
