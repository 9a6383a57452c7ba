import Foundation

/// The rows of a data-driven run (`orchestra run FILE --data rows.csv`): the workflow runs
/// once per row, `{{data.COLUMN}}` being the row's value.
package struct DataRows: Sendable, Hashable {
    /// The column names, in the order the file gives them.
    package var columns: [String]
    /// One value per column for each row (a JSON row without a key has no value for it).
    package var rows: [[String: String]]

    package init(columns: [String], rows: [[String: String]]) {
        self.columns = columns
        self.rows = rows
    }
}

extension Workflow {
    /// Reads the rows of a data-driven run: CSV (RFC 4180, a header row of column names, then
    /// one record per row; quoted fields may hold commas, quotes written `""` and line breaks)
    /// when the name ends in `.csv`, JSON (a list of objects; strings as they are, other values
    /// as their JSON text) when it ends in `.json`.
    ///
    /// - Throws: ``WorkflowErrors`` naming the file and line of the problem: an empty file, a
    ///   column name given twice or empty, a record with more or fewer fields than the header,
    ///   an unclosed quote, JSON that is not a list of objects.
    package static func loadRows(contentsOf url: URL, name: String? = nil) throws(WorkflowErrors) -> DataRows {
        let file = name ?? url.path
        let text = try readText(
            at: url.path, file: file, kind: "data file",
            empty: "is empty: expected a header line (CSV) or a list of objects (JSON)")
        switch url.pathExtension.lowercased() {
        case "csv": return try csvRows(text, file: file)
        case "json": return try jsonRows(text, file: file)
        default:
            throw WorkflowErrors([
                WorkflowError(
                    .unreadable, "a data file is .csv (a header row, then a row per run) or .json (a list of objects)",
                    file: file)
            ])
        }
    }

    /// The rows of CSV text (see ``loadRows(contentsOf:name:)``).
    static func csvRows(_ text: String, file: String) throws(WorkflowErrors) -> DataRows {
        func fail(_ message: String, line: Int) -> WorkflowErrors {
            WorkflowErrors([
                WorkflowError(.syntax, message, file: file, location: SourceLocation(line: line, column: 1))
            ])
        }
        // Records as lists of fields, each with the line it starts on.
        var records: [(line: Int, fields: [String])] = []
        var fields: [String] = []
        var field = ""
        var quoted = false
        var fieldStarted = false
        var line = 1
        var recordLine = 1
        var scalars = text.unicodeScalars[...]
        if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
        var iterator = scalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        func endRecord() {
            fields.append(field)
            // A blank line is not a record.
            if !(fields.count == 1 && fields[0].isEmpty && !fieldStarted) { records.append((recordLine, fields)) }
            fields = []
            field = ""
            fieldStarted = false
        }
        while let scalar = pending ?? iterator.next() {
            pending = nil
            if quoted {
                if scalar == "\"" {
                    let next = iterator.next()
                    if next == "\"" {
                        field.unicodeScalars.append("\"")
                    } else {
                        quoted = false
                        pending = next
                    }
                } else {
                    if scalar == "\n" { line += 1 }
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"" where field.isEmpty:
                quoted = true
                fieldStarted = true
            case ",":
                fields.append(field)
                field = ""
                fieldStarted = true
            case "\r":
                let next = iterator.next()
                if next != "\n" { pending = next }
                endRecord()
                line += 1
                recordLine = line
            case "\n":
                endRecord()
                line += 1
                recordLine = line
            default:
                field.unicodeScalars.append(scalar)
                fieldStarted = true
            }
        }
        if quoted { throw fail("a quoted field is not closed (a '\"' is missing)", line: recordLine) }
        if !field.isEmpty || !fields.isEmpty || fieldStarted { endRecord() }
        guard let header = records.first else { throw fail("no header row: the first line names the columns", line: 1) }
        let columns = header.fields.map { $0.trimmingCharacters(in: .whitespaces) }
        var seen: Set<String> = []
        for (index, column) in columns.enumerated() {
            guard !column.isEmpty else {
                throw fail("column \(index + 1) of the header has no name", line: header.line)
            }
            guard seen.insert(column).inserted else {
                throw fail("the column '\(short: column)' is named twice in the header", line: header.line)
            }
        }
        var rows: [[String: String]] = []
        for record in records.dropFirst() {
            guard record.fields.count == columns.count else {
                throw fail(
                    "\(record.fields.count) field\(record.fields.count == 1 ? "" : "s"), but the header has \(columns.count) columns",
                    line: record.line)
            }
            rows.append(Dictionary(uniqueKeysWithValues: zip(columns, record.fields)))
        }
        return DataRows(columns: columns, rows: rows)
    }

    /// The rows of JSON text: a list of objects.
    static func jsonRows(_ text: String, file: String) throws(WorkflowErrors) -> DataRows {
        func fail(_ message: String) -> WorkflowErrors {
            WorkflowErrors([WorkflowError(.syntax, message, file: file)])
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: Data(text.utf8))
        } catch {
            throw fail("not JSON: \(error)")
        }
        guard case .array(let elements) = document else { throw fail("expected a list of objects, one per row") }
        var columns: [String] = []
        var known: Set<String> = []
        var rows: [[String: String]] = []
        for (index, element) in elements.enumerated() {
            guard case .object(let members) = element else {
                throw fail("row \(index + 1) is \(short: element.text), not an object of column: value")
            }
            var row: [String: String] = [:]
            for member in members {
                row[member.key] = member.value.interpolated
                if known.insert(member.key).inserted { columns.append(member.key) }
            }
            rows.append(row)
        }
        return DataRows(columns: columns, rows: rows)
    }
}
