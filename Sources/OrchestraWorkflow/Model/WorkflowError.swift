/// A place in a workflow file: 1-based line and column (counted in Unicode scalars, as
/// libyaml counts).
package struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    package var line: Int
    package var column: Int
    /// The file, for a place in a file another one includes (`include:`); `nil` in the file
    /// that was loaded. A message at this place names this file.
    package var file: String?

    package init(line: Int, column: Int, file: String? = nil) {
        self.line = line
        self.column = column
        self.file = file
    }

    package var description: String { "\(line):\(column)" }
}

/// One problem in a workflow file, naming the file, the line, the step and the field:
/// `flow.yaml:12:5: error: step 'login', field 'url': unknown variable 'bse'`.
///
/// ```swift
/// catch let errors as WorkflowErrors {
///     for error in errors.errors where error.code == .unknownField { … }
/// }
/// ```
package struct WorkflowError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem, comparable with `==`; more codes may be added.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let description: String
        private init(_ description: String) { self.description = description }

        /// The file could not be read.
        package static let unreadable = Code("unreadable")
        /// Not YAML or JSON (Yams' scanner or parser refused it), or a key given twice.
        package static let syntax = Code("syntax")
        /// A key the format does not have.
        package static let unknownField = Code("unknownField")
        /// A required field is missing.
        package static let missingField = Code("missingField")
        /// A field of the wrong type or out of range.
        package static let invalidValue = Code("invalidValue")
        /// Two steps with one id, or an id that is not allowed.
        package static let duplicateStep = Code("duplicateStep")
        /// `needs` or a template names a step that does not exist.
        package static let unknownStep = Code("unknownStep")
        /// A template uses a capture its step does not define.
        package static let unknownCapture = Code("unknownCapture")
        /// A template uses a variable that is not defined.
        package static let unknownVariable = Code("unknownVariable")
        /// A template that cannot be read (`{{…}}` unbalanced, not `step.name`, unquoted).
        package static let invalidTemplate = Code("invalidTemplate")
        /// The steps depend on each other in a cycle.
        package static let cycle = Code("cycle")
        /// A URL without an http(s) scheme or a host.
        package static let invalidURL = Code("invalidURL")
        /// A capture path that cannot be read.
        package static let invalidCapturePath = Code("invalidCapturePath")
    }

    package var code: Code
    /// The file, as given on the command line; `nil` for text parsed without a file.
    package var file: String?
    /// Where in the file, when known.
    package var location: SourceLocation?
    /// The step involved, if any.
    package var step: String?
    /// The field involved, as a path (`retry.attempts`, `auth.login.url`), if any.
    package var field: String?
    /// What is wrong, naming the value and what was expected.
    package var message: String

    package init(
        _ code: Code, _ message: String, file: String? = nil, location: SourceLocation? = nil,
        step: String? = nil, field: String? = nil
    ) {
        self.code = code
        self.message = message
        self.file = file
        self.location = location
        self.step = step
        self.field = field
    }

    /// `FILE:LINE:COLUMN: error: step 'ID', field 'FIELD': message`, without the parts that do
    /// not apply. A file, step or field longer than 200 characters is shortened (a 50 MB id is
    /// shown as its start and its length).
    package var description: String {
        var place = file.map { MessageValue.shortened($0) } ?? ""
        if let location { place += (place.isEmpty ? "" : ":") + "\(location.line):\(location.column)" }
        var subject: [String] = []
        if let step { subject.append("step '\(short: step)'") }
        if let field { subject.append("field '\(short: field)'") }
        let about = subject.isEmpty ? "" : subject.joined(separator: ", ") + ": "
        return (place.isEmpty ? "" : place + ": ") + "error: " + about + message
    }
}

/// Every problem found in a workflow file, in file order. Thrown by ``Workflow/load(contentsOf:variables:)``
/// and ``Workflow/parse(_:file:variables:)``; nothing is sent when a file has any.
package struct WorkflowErrors: Error, Sendable, CustomStringConvertible {
    package var errors: [WorkflowError]

    package init(_ errors: [WorkflowError]) {
        // By place in each file: the loaded file's first, then each included one's (a place
        // that names its file, `include:`) in the order their first problem came.
        var files: [String: Int] = [:]
        for error in errors {
            if let file = error.location?.file, files[file] == nil { files[file] = files.count + 1 }
        }
        func key(_ error: WorkflowError) -> (Int, Int, Int) {
            (error.location?.file.flatMap { files[$0] } ?? 0, error.location?.line ?? 0, error.location?.column ?? 0)
        }
        self.errors = errors.sorted { key($0) < key($1) }
    }

    /// One problem per line.
    package var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}
