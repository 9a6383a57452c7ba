import Foundation

extension Workflow {
    /// Reads a file of variables (`orchestra run --vars-file FILE`): `.env` lines when the
    /// file's name ends in `.env`, otherwise a YAML or JSON mapping of names to text (numbers
    /// and booleans as written), exactly as under `vars:`.
    ///
    /// `.env` lines are `NAME=value`; blank lines and lines starting with `#` are skipped, an
    /// `export ` before the name is allowed, and a value in double quotes may use `\n`, `\"` and
    /// `\\` (single quotes keep the text as is). Surrounding spaces are trimmed.
    ///
    /// - Parameters:
    ///   - url: The file.
    ///   - name: How messages name the file; its path by default.
    /// - Throws: ``WorkflowErrors`` naming the file, line and variable of every problem.
    package static func loadVariables(
        contentsOf url: URL, name: String? = nil
    ) throws(WorkflowErrors) -> [String: String] {
        let file = name ?? url.path
        let text = try readText(
            at: url.path, file: file, kind: "variables file", empty: "empty file; expected name: value lines")
        if url.lastPathComponent.hasSuffix(".env") { return try dotEnvVariables(text, file: file) }
        var parser = WorkflowParser(file: file, overrides: [:])
        guard let document = parser.compose(text) else { throw WorkflowErrors(parser.reader.errors) }
        guard let root = document else {
            throw WorkflowErrors([WorkflowError(.missingField, "empty file; expected name: value lines", file: file)])
        }
        let variables = parser.variables(root)
        guard parser.reader.errors.isEmpty else { throw WorkflowErrors(parser.reader.errors) }
        return variables
    }

    /// The variables of `.env` lines (see ``loadVariables(contentsOf:name:)``).
    static func dotEnvVariables(_ text: String, file: String) throws(WorkflowErrors) -> [String: String] {
        var variables: [String: String] = [:]
        var errors: [WorkflowError] = []
        for (offset, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated()
        {
            var line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            if line.hasPrefix("export ") { line = line.dropFirst("export ".count).trimmingCharacters(in: .whitespaces) }
            let location = SourceLocation(line: offset + 1, column: 1)
            guard let equals = line.firstIndex(of: "=") else {
                errors.append(
                    WorkflowError(
                        .syntax, "expected NAME=value, got '\(short: line)'", file: file, location: location))
                continue
            }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                errors.append(
                    WorkflowError(
                        .invalidValue, "'\(short: name)' is not a variable name (letters, digits, '_' and '-')",
                        file: file, location: location))
                continue
            }
            variables[name] = unquoted(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        guard errors.isEmpty else { throw WorkflowErrors(errors) }
        return variables
    }

    /// A `.env` value without its quotes: `"a\nb"` with its escapes read, `'a\n'` as written.
    private static func unquoted(_ value: String) -> String {
        guard value.count >= 2, let quote = value.first, quote == "\"" || quote == "'", value.last == quote else {
            return value
        }
        let inner = value.dropFirst().dropLast()
        guard quote == "\"" else { return String(inner) }
        var result = ""
        var escaped = false
        for character in inner {
            if escaped {
                switch character {
                case "n": result.append("\n")
                case "t": result.append("\t")
                default: result.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return escaped ? result + "\\" : result
    }
}
