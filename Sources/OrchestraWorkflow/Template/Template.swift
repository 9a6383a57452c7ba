import Foundation

/// A string with `{{…}}` references: `{{vars.base}}/users/{{login.user_id}}`.
///
/// A reference is `{{vars.NAME}}` (a variable) or `{{STEP.CAPTURE}}` (a value captured from an
/// earlier step's JSON response; the step then runs first). Spaces inside the braces are
/// ignored. `{{STEP.CAPTURE | raw}}` inserts a value into a URL without percent-encoding it.
///
/// How a value is inserted depends on where the template is (see ``render(for:with:)``):
/// percent-encoded in URLs, as is in headers and text bodies, JSON-escaped in JSON bodies.
public struct Template: Sendable, Hashable, CustomStringConvertible {
    /// A piece of a template.
    public enum Segment: Sendable, Hashable {
        case literal(String)
        case reference(Reference)
    }

    /// `{{namespace.name}}`: `namespace` is `vars` or a step id.
    public struct Reference: Sendable, Hashable, CustomStringConvertible {
        public var namespace: String
        public var name: String
        /// `| raw`: inserted into a URL as is.
        public var isRaw: Bool

        /// Whether it names a variable rather than a capture.
        public var isVariable: Bool { namespace == Template.variablesNamespace }

        public var description: String { "{{\(namespace).\(name)\(isRaw ? " | raw" : "")}}" }
    }

    /// Where a rendered template goes, which decides how values are escaped.
    public enum Context: Sendable {
        /// Percent-encoded as a URL component value, except a reference that starts the URL
        /// (a base URL such as `{{vars.base}}`) or one marked `| raw`.
        case url
        /// Inserted as is: header values, text bodies.
        case text
    }

    /// The namespace of variables: `{{vars.base}}`.
    public static let variablesNamespace = "vars"

    public let source: String
    public let segments: [Segment]

    /// Parses `source`.
    ///
    /// - Throws: ``TemplateSyntaxError`` for a `{{` without `}}`, an empty reference, a
    ///   reference that is not `namespace.name`, or an unknown filter.
    public init(parsing source: String) throws(TemplateSyntaxError) {
        self.source = source
        var segments: [Segment] = []
        var rest = Substring(source)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { segments.append(.literal(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw TemplateSyntaxError(message: "'{{' without a closing '}}' in \"\(source)\"")
            }
            segments.append(.reference(try Self.reference(String(rest[open.upperBound..<close.lowerBound]), in: source)))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { segments.append(.literal(String(rest))) }
        self.segments = segments
    }

    /// The references, in order.
    public var references: [Reference] {
        segments.compactMap { if case .reference(let reference) = $0 { reference } else { nil } }
    }

    /// Whether the template is exactly one reference and nothing else.
    public var soleReference: Reference? {
        if segments.count == 1, case .reference(let reference) = segments[0] { return reference }
        return nil
    }

    public var description: String { source }

    /// The text with every reference replaced by its value, escaped for `context`.
    ///
    /// - Throws: ``TemplateValues/Missing`` if a value is missing (validation prevents it).
    public func render(for context: Context, with values: TemplateValues) throws(TemplateValues.Missing) -> String {
        var output = ""
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .literal(let text):
                output += text
            case .reference(let reference):
                let value = try values.value(of: reference).interpolated
                let asIs = context == .text || reference.isRaw || index == 0
                output += asIs ? value : Self.percentEncoded(value)
            }
        }
        return output
    }

    /// `value` percent-encoded as a URL component: everything but the unreserved characters of
    /// RFC 3986 (`A–Z a–z 0–9 - . _ ~`).
    public static func percentEncoded(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func reference(_ inner: String, in source: String) throws(TemplateSyntaxError) -> Reference {
        var parts = inner.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let path = parts.removeFirst()
        var isRaw = false
        for filter in parts {
            guard filter == "raw" else {
                throw TemplateSyntaxError(message: "unknown filter '\(filter)' in {{\(inner)}}; the only filter is 'raw'")
            }
            isRaw = true
        }
        guard !path.isEmpty else { throw TemplateSyntaxError(message: "empty reference '{{}}' in \"\(source)\"") }
        let names = path.split(separator: ".", omittingEmptySubsequences: false)
        guard names.count == 2, !names[0].isEmpty, !names[1].isEmpty, !path.contains(where: \.isWhitespace) else {
            throw TemplateSyntaxError(
                message: "'{{\(inner)}}' is not a reference: write {{vars.NAME}} or {{STEP.CAPTURE}}"
            )
        }
        return Reference(namespace: String(names[0]), name: String(names[1]), isRaw: isRaw)
    }
}

/// A template that cannot be read; the parser adds the file, line, step and field.
public struct TemplateSyntaxError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// What references resolve to while a workflow runs: the variables and the captures of the
/// steps that have succeeded.
public struct TemplateValues: Sendable {
    public var variables: [String: String]
    /// Captures by step id, then by capture name.
    public var captures: [String: [String: JSONValue]]

    public init(variables: [String: String] = [:], captures: [String: [String: JSONValue]] = [:]) {
        self.variables = variables
        self.captures = captures
    }

    /// A reference whose value is not there.
    public struct Missing: Error, Sendable, CustomStringConvertible {
        public var reference: Template.Reference
        public var description: String { "no value for \(reference)" }
    }

    /// The value `reference` names: a variable as a string, a capture as captured.
    public func value(of reference: Template.Reference) throws(Missing) -> JSONValue {
        if reference.isVariable {
            guard let value = variables[reference.name] else { throw Missing(reference: reference) }
            return .string(value)
        }
        guard let value = captures[reference.namespace]?[reference.name] else { throw Missing(reference: reference) }
        return value
    }
}
