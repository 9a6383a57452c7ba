import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import Yams

extension Workflow {
    /// Reads and checks a workflow file (YAML or JSON).
    ///
    /// - Parameters:
    ///   - url: The file.
    ///   - name: How messages name the file; its path by default.
    ///   - variables: Overrides of `vars:` (`--var base=http://…`); they may add variables.
    ///   - environment: Where `{{env.NAME}}` is read: the process's environment by default.
    /// - Throws: ``WorkflowErrors`` listing every problem found, each with the file, line,
    ///   step and field.
    package static func load(
        contentsOf url: URL, name: String? = nil, variables: [String: String] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment, dataColumns: [String]? = nil
    ) throws(WorkflowErrors) -> Workflow {
        let file = name ?? url.path
        let text = try readText(at: url.path, file: file)
        // Standard input (`-`, `/dev/stdin`) has no folder: its paths are relative to the
        // current one.
        let directory =
            url.path.hasPrefix("/dev/") || url.path.hasPrefix("/proc/")
            ? URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            : url.deletingLastPathComponent()
        return try parse(
            text, file: file, variables: variables, environment: environment, directory: directory,
            dataColumns: dataColumns)
    }

    /// The whole text at `path`, read with ``readInputFile(at:file:limit:)`` (a regular file,
    /// a pipe, `/dev/stdin` alike, at most ``inputFileLimit`` bytes).
    ///
    /// - Parameters:
    ///   - kind: What the file is, for the message about a directory.
    ///   - empty: What is wrong with an empty file, for this kind of file.
    /// - Throws: ``WorkflowErrors`` with code ``WorkflowError/Code/unreadable``: no such file,
    ///   a directory, a file past the limit, an empty file, bytes that are not UTF-8.
    static func readText(
        at path: String, file: String, kind: String = "workflow file",
        empty: String = "empty file; a workflow needs at least 'steps'"
    ) throws(WorkflowErrors) -> String {
        let data = try readInputFile(at: path, file: file, kind: kind)
        guard !data.isEmpty else { throw WorkflowErrors([WorkflowError(.unreadable, empty, file: file)]) }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw WorkflowErrors([WorkflowError(.unreadable, "is not UTF-8 text", file: file)])
        }
        return text
    }

    /// Parses and checks a workflow written in YAML or JSON.
    ///
    /// Checks: the syntax; every field's name, type and range; ids; `needs`; every template
    /// (variables and environment variables defined, steps and captures that exist; `for_each` exactly one quoted
    /// `{{STEP.CAPTURE}}`; `{{item}}` and `{{index}}` only in a `for_each` step); cycles (with their path); URLs
    /// (after substituting variables). A step's use of `{{other.capture}}` makes it depend on
    /// `other`.
    ///
    /// - Throws: ``WorkflowErrors`` listing every problem found, in file order.
    package static func parse(
        _ text: String, file: String? = nil, variables: [String: String] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        directory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true),
        dataColumns: [String]? = nil
    ) throws(WorkflowErrors) -> Workflow {
        var parser = WorkflowParser(
            file: file, overrides: variables, environment: environment, directory: directory)
        parser.dataColumns = dataColumns
        guard var workflow = parser.parse(text), parser.reader.errors.isEmpty else {
            // A message may quote a URL or a value made from a secret variable. The secrets are
            // known only once `secrets:` is read: the file is read again with them, so that each
            // message masks them before it cuts a value (`"\(short: url)"`).
            let redactor = Redactor(secrets: parser.secretValues)
            if !redactor.isEmpty {
                parser = WorkflowParser(
                    file: file, overrides: variables, environment: environment, directory: directory)
                parser.dataColumns = dataColumns
                _ = Redactor.$current.withValue(redactor) { parser.parse(text) }
            }
            throw WorkflowErrors(
                parser.reader.errors.map { error in
                    var error = error
                    error.message = redactor.redact(error.message)
                    return error
                })
        }
        workflow.digest = parser.inclusion.digest(of: text)
        return workflow
    }
}

/// Walks the node tree of a workflow file (``YAMLComposer``) into a ``Workflow``.
struct WorkflowParser {
    static let topLevelFields = [
        "name", "vars", "secrets", "limit", "rate", "burst", "hosts", "failure", "follow_redirects", "cookies", "auth",
        "basic_auth",
        "tls", "steps", "include",
    ]
    static let authFields = ["login", "refresh", "header", "scheme", "failure"]
    /// The fields of the auth block's login and refresh: a request's, and where the token is.
    static let tokenRequestFields = RequestTemplate.fields.map(\.name) + ["token", "expires_in"]

    var reader: NodeReader
    let overrides: [String: String]
    /// Where `{{env.NAME}}` is read.
    let environment: [String: String]
    /// Where each template was written, for the reference checks.
    var sites: [TemplateSite] = []
    /// Ids of steps that could not be read, so references to them are not reported again.
    var brokenSteps: Set<String> = []
    /// Where each `needs` entry was written.
    var needSites: [NeedSite] = []
    /// Ids of steps that have a `for_each` field (even an invalid one): `{{item}}` is allowed
    /// there.
    var forEachSteps: Set<String> = []

    /// The values of the variables `secrets:` names, once read: redacted in the errors.
    var secretValues: [String] = []
    /// The columns of the run's data file, if it has one.
    var dataColumns: [String]?
    /// `include:`: where this file is in the tree of includes, and what its includes brought.
    var inclusion = WorkflowInclusion()
    /// Where the paths of `body_file:` and `multipart:` files are relative to: the workflow
    /// file's folder.
    let directory: URL

    init(
        file: String?, overrides: [String: String], environment: [String: String] = [:],
        directory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
    ) {
        reader = NodeReader(file: file)
        self.overrides = overrides
        self.environment = environment
        self.directory = directory
    }

    /// The file's node tree; `nil` after recording its syntax errors, `.some(nil)` for an
    /// empty document.
    mutating func compose(_ text: String) -> Node?? {
        // Plain scalars are typed once, by `YAMLScalarType` (Yams' default resolver runs
        // regular expressions every time a tag is read).
        switch YAMLComposer.compose(text) {
        case .document(let document):
            return .some(document)
        case .problems(let problems):
            for problem in problems {
                reader.fail(.syntax, problem.message, at: SourceLocation(line: problem.line, column: problem.column))
            }
            return nil
        case .syntaxError:
            do {
                _ = try Yams.compose(yaml: text, .basic)
                reader.fail(.syntax, "not valid YAML or JSON", at: SourceLocation?.none)
            } catch {
                reportSyntax(error, in: text)
            }
            return nil
        }
    }

    mutating func parse(_ text: String) -> Workflow? {
        guard let document = compose(text) else { return nil }
        guard let written = document else {
            reader.fail(.missingField, "the file is empty; a workflow needs at least 'steps'", at: SourceLocation?.none)
            return nil
        }
        let root = inclusion.isIncluded ? inclusion.prepared(written, file: reader.file ?? "") : written
        guard let fields = reader.entries(root, allowed: Self.topLevelFields, step: nil, field: nil) else { return nil }
        var workflow = Workflow(
            file: reader.file, name: nil, variables: [:], limit: Workflow.defaultLimit, hostLimits: [],
            failurePolicy: .continue, auth: nil, steps: []
        )
        var stepsNode: Node?
        for (key, node) in fields {
            switch key {
            case "name": workflow.name = reader.string(node, step: nil, field: key)
            case "vars": workflow.variables = variables(node)
            case "limit": workflow.limit = reader.integer(node, minimum: 1, step: nil, field: key) ?? workflow.limit
            case "rate": workflow.rate = reader.rate(node, step: nil, field: key)
            case "burst":
                workflow.burst =
                    reader.integer(node, minimum: 1, step: nil, field: key, what: "a number of requests")
                    .map { min($0, RateText.maximumCount) } ?? workflow.burst
            case "failure":
                guard let text = reader.string(node, step: nil, field: key) else { break }
                if let policy = WorkflowFailurePolicy(rawValue: text) {
                    workflow.failurePolicy = policy
                } else {
                    reader.fail(
                        .invalidValue, "must be 'continue' or 'stop', got '\(short: text)'", at: node, field: key)
                }
            case "follow_redirects":
                workflow.followRedirects = reader.bool(node, step: nil, field: key) ?? workflow.followRedirects
            case "cookies":
                workflow.usesCookies = reader.bool(node, step: nil, field: key) ?? workflow.usesCookies
            case "tls": workflow.tls = tls(node)
            case "steps": stepsNode = node
            default: break
            }
        }
        for (key, value) in overrides { workflow.variables[key] = value }
        includeFiles(fields, into: &workflow)
        // Host limits and auth use variables: read them once every variable is known.
        for (key, node) in fields {
            switch key {
            case "hosts": workflow.hostLimits = hostLimits(node, variables: workflow.variables)
            case "secrets":
                workflow.secretValues = secrets(node, variables: workflow.variables)
                secretValues = workflow.secretValues
            case "auth": workflow.auth = auth(node)
            case "basic_auth":
                workflow.basicAuth = basicAuth(node, context: FieldContext(step: nil, variablesOnly: true))
            default: break
            }
        }
        // An included file may bring only variables, secrets or an auth: block.
        guard stepsNode != nil || inclusion.includesFiles || inclusion.isIncluded else {
            reader.fail(.missingField, "a workflow needs 'steps', a list of requests", at: root)
            return nil
        }
        workflow.dataColumns = dataColumns
        workflow.steps = stepsNode.map { steps($0) } ?? []
        mergeIncluded(into: &workflow)
        // An included file is checked with the whole tree, by the file that includes it.
        if inclusion.isIncluded { return workflow }
        workflow.usedVariables = Set(sites.flatMap { $0.template.references.filter(\.isVariable).map(\.name) })
        workflow.usedDataColumns = Set(sites.flatMap { $0.template.references.filter(\.isData).map(\.name) })
        // Only the environment variables the templates use are kept (and checked).
        for site in sites {
            for reference in site.template.references where reference.isEnvironment {
                workflow.environment[reference.name] = environment[reference.name]
            }
        }
        var checker = WorkflowChecker(
            workflow: workflow, sites: sites, needSites: needSites, brokenSteps: brokenSteps,
            forEachSteps: forEachSteps, reader: reader
        )
        checker.check()
        reader = checker.reader
        return workflow
    }

    // MARK: - Top level

    mutating func variables(_ node: Node) -> [String: String] {
        guard let entries = reader.freeEntries(node, step: nil, field: "vars") else { return [:] }
        var variables: [String: String] = [:]
        for (name, _, value) in entries {
            if let text = reader.string(value, step: nil, field: "vars.\(name)") { variables[name] = text }
        }
        return variables
    }

    /// `secrets: [api_key, env.TOKEN]`: the values of these variables (or environment
    /// variables) are redacted in everything the run shows. Each must be defined.
    private mutating func secrets(_ node: Node, variables: [String: String]) -> [String] {
        var values: [String] = []
        for element in reader.list(node) {
            guard let name = reader.string(element, step: nil, field: "secrets") else { continue }
            let environmentPrefix = Template.environmentNamespace + "."
            if name.hasPrefix(environmentPrefix) {
                let variable = String(name.dropFirst(environmentPrefix.count))
                guard let value = environment[variable] else {
                    reader.fail(
                        .unknownVariable, "the environment variable '\(short: variable)' is not set", at: element,
                        field: "secrets")
                    continue
                }
                values.append(value)
            } else if let value = variables[name] {
                values.append(value)
            } else {
                let suggestion =
                    NodeReader.closest(to: name, in: variables.keys.sorted()).map { " (did you mean '\($0)'?)" } ?? ""
                reader.fail(
                    .unknownVariable,
                    "'\(short: name)' is not a variable\(suggestion): secrets names variables of vars:, --var or --vars-file, or env.NAME",
                    at: element, field: "secrets")
            }
        }
        return values
    }

    private mutating func hostLimits(_ node: Node, variables: [String: String]) -> [HostLimit] {
        guard let entries = reader.freeEntries(node, step: nil, field: "hosts") else { return [] }
        return entries.compactMap { key, keyNode, value in
            // `host: 4`, or `host: {limit: 4, rate: 20/s}`.
            var limit: Int?
            var rate: Rate?
            if case .mapping = value {
                guard let fields = reader.entries(value, allowed: ["limit", "rate"], step: nil, field: "hosts.\(key)")
                else { return nil }
                for (name, field) in fields {
                    switch name {
                    case "limit":
                        guard
                            let value = reader.integer(
                                field, minimum: 1, step: nil, field: "hosts.\(key).limit", what: "a limit")
                        else { return nil }
                        limit = value
                    default:
                        guard let value = reader.rate(field, step: nil, field: "hosts.\(key).rate") else { return nil }
                        rate = value
                    }
                }
                guard limit != nil || rate != nil else {
                    reader.fail(
                        .invalidValue, "needs a limit, a rate or both, as in {limit: 4, rate: 20/s}", at: value,
                        field: "hosts.\(key)")
                    return nil
                }
            } else {
                guard
                    let value = reader.integer(
                        value, minimum: 1, step: nil, field: "hosts.\(key)",
                        what: "a limit (or {limit: N, rate: N/s})")
                else { return nil }
                limit = value
            }
            var host = key
            if let template = reader.template(keyNode, step: nil, field: "hosts") {
                host = (try? template.render(for: .text, with: TemplateValues(variables: variables))) ?? key
                sites.append(
                    TemplateSite(
                        template: template, step: nil, field: "hosts", location: NodeReader.location(keyNode),
                        variablesOnly: true))
            }
            // A key with a template the checker reports (an unknown variable) stays as written.
            guard host.contains("{{") || HTTPCoordinator.isHostPattern(host) else {
                let shown = host == key ? "'\(short: key)'" : "'\(short: key)' (= '\(short: host)')"
                reader.fail(
                    .invalidValue,
                    "\(shown) is not a host: write 'host' (any port) or 'host:port', as in 127.0.0.1:8080, without a scheme or path",
                    at: keyNode, field: "hosts"
                )
                return nil
            }
            return HostLimit(host: host, limit: limit, rate: rate, location: NodeReader.location(keyNode))
        }
    }

    /// The line and column (in Unicode scalars, as libyaml counts) of the byte at `offset`.
    static func location(ofByte offset: Int, in text: String) -> SourceLocation {
        var line = 1
        var lineStart = 0
        for (index, byte) in text.utf8.prefix(offset).enumerated() where byte == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        let column = text.utf8.dropFirst(lineStart).prefix(offset - lineStart).filter { $0 & 0xC0 != 0x80 }.count + 1
        return SourceLocation(line: line, column: column)
    }

    /// The quote (`'"'` or `"'"`) that opens a quoted value on an earlier line than `line` and
    /// is still open at `line` or closes on it: where a syntax error at `line` began, when a
    /// closing quote was forgotten. Quotes are followed as YAML reads them: one that starts a
    /// value (at the start of a line or after `:`, `-`, `?`, `[`, `{` or `,`), `\"` and `''`
    /// inside, comments outside.
    ///
    /// Complexity: linear in the text up to `line`.
    static func openQuote(endingAt line: Int, in text: String) -> (location: SourceLocation, mark: String)? {
        var open: (location: SourceLocation, quote: Character)?
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            if lineNumber > line { break }
            let characters = Array(rawLine)
            var index = 0
            var previous: Character?  // the last character outside quotes that is not a space
            while index < characters.count {
                let character = characters[index]
                if let quote = open?.quote {
                    if quote == "\"", character == "\\" {
                        index += 2
                        continue
                    }
                    if character == quote {
                        if quote == "'", index + 1 < characters.count, characters[index + 1] == "'" {
                            index += 2
                            continue
                        }
                        // Closed: on its own line it is no concern; on the error's line it is.
                        if let opened = open, opened.location.line != lineNumber, lineNumber == line {
                            return (opened.location, opened.quote == "\"" ? "'\"'" : "\"'\"")
                        }
                        open = nil
                        previous = character
                    }
                    index += 1
                    continue
                }
                if character == "#", index == 0 || characters[index - 1] == " " { break }
                if character == "\"" || character == "'",
                    previous == nil || [":", "-", "?", "[", "{", ","].contains(previous!)
                {
                    open = (SourceLocation(line: lineNumber, column: index + 1), character)
                } else if character != " " && character != "\t" && character != "\r" {
                    previous = character
                }
                index += 1
            }
        }
        guard let opened = open, opened.location.line < line else { return nil }
        return (opened.location, opened.quote == "\"" ? "'\"'" : "\"'\"")
    }

    private mutating func reportSyntax(_ error: any Error, in text: String) {
        var location: SourceLocation?
        var message = "\(error)"
        if let error = error as? YamlError {
            switch error {
            case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
                .composer(let context, let problem, let mark, _):
                location = SourceLocation(line: mark.line, column: mark.column)
                if problem.hasPrefix("Maximum nesting level reached") {
                    // libyaml's own words name a C function of its API.
                    message = "not valid YAML or JSON: lists and mappings are nested more than 1000 levels deep"
                } else {
                    message =
                        "not valid YAML or JSON: \(problem)"
                        + (context.map { " (\($0.text) at line \($0.mark.line))" } ?? "")
                }
            case .reader(let problem, let offset, let value, _):
                // libyaml gives the byte offset of the character it refused.
                location = offset.map { Self.location(ofByte: $0, in: text) }
                let character = value >= 0 ? String(format: " (U+%04X)", value) : ""
                message = "not valid YAML or JSON: \(problem)\(character)"
            case .duplicatedKeysInMapping(let duplicates, let context):
                location = SourceLocation(line: context.mark.line, column: context.mark.column)
                message = "a key is given twice in one mapping: \(duplicates.joined(separator: ", "))"
            default:
                message = "not valid YAML or JSON: \(error)"
            }
        }
        // A quote left open runs on over the next lines, and libyaml stops where it ends (or
        // at the end of the file): the quote is where the mistake is.
        if message.hasPrefix("not valid YAML or JSON: "), let at = location,
            let quote = Self.openQuote(endingAt: at.line, in: text)
        {
            message =
                "not valid YAML or JSON: the \(quote.mark) opened here is not closed on its line; the quoted value runs on to line \(at.line), where: \(message.dropFirst("not valid YAML or JSON: ".count))"
            location = quote.location
        }
        if let line = location?.line, line >= 1 {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let nearby = lines[max(0, line - 2)..<min(lines.count, line)]
            if nearby.contains(where: { $0.contains("{{") && !$0.contains("\"{{") && !$0.contains("'{{") }) {
                message += "; templates must be quoted, as in url: \"{{vars.base}}/login\""
            }
            if nearby.contains(where: { $0.prefix { $0 == " " || $0 == "\t" }.contains("\t") }) {
                message += "; indent with spaces: YAML does not allow tabs in indentation"
            }
        }
        reader.fail(.syntax, message, at: location)
    }

    // MARK: - Steps

    private mutating func steps(_ node: Node) -> [WorkflowStep] {
        guard case .sequence(let sequence) = node else {
            reader.fail(
                .invalidValue, "must be a list of steps (- id: …), got \(NodeReader.describe(node))", at: node,
                field: "steps")
            return []
        }
        guard !sequence.isEmpty else {
            reader.fail(.invalidValue, "is empty; a workflow needs at least one step", at: node, field: "steps")
            return []
        }
        return sequence.enumerated().compactMap { index, stepNode in step(stepNode, number: index + 1) }
    }

    private mutating func step(_ node: Node, number: Int) -> WorkflowStep? {
        // Yams' `mapping["id"]` makes a node of the key and compares whole nodes: the keys'
        // text is enough.
        var idNode: Node?
        var hasForEach = false
        if case .mapping(let mapping) = node {
            for (key, value) in mapping {
                guard case .scalar(let scalar) = key else { continue }
                if scalar.string == "id", idNode == nil { idNode = value }
                if scalar.string == "for_each" { hasForEach = true }
            }
        }
        let id = idNode.flatMap(reader.scalarText)
        if let id, hasForEach { forEachSteps.insert(id) }
        guard
            let fields = reader.entries(
                node, allowed: WorkflowStep.fieldNames, step: id, field: id == nil ? "steps[\(number - 1)]" : nil)
        else { return nil }
        if let idNode, id == nil {
            // `id: [a]` or `id: {a: 1}`: the id is there, but not as text.
            _ = reader.string(idNode, step: nil, field: "steps[\(number - 1)].id")
            return nil
        }
        guard let id, !id.isEmpty else {
            reader.fail(
                .missingField, "step \(number) has no 'id' (every step needs a unique id)", at: node, field: "id")
            return nil
        }
        guard fields.contains(where: { $0.key == "url" }) else {
            reader.fail(.missingField, "missing 'url'", at: node, step: id, field: "url")
            brokenSteps.insert(id)
            return nil
        }
        let (sitesBefore, errorsBefore) = (sites.count, reader.errors.count)
        var step = WorkflowStep(id: id, request: RequestTemplate(url: .empty), location: NodeReader.location(node))
        var usable = true
        for (key, value) in fields {
            usable = WorkflowStep.fieldsByName[key]!.read(&self, value, &step, FieldContext(step: id)) && usable
        }
        guard usable else {
            brokenSteps.insert(id)
            return nil
        }
        assert(
            reader.errors.count > errorsBefore
                || sites[sitesBefore...].flatMap(\.template.references).count(where: {
                    $0.isCapture && !step.isPageReference($0)
                })
                    == step.captureReferences.count,
            "step '\(id)': a field read a {{STEP.CAPTURE}} that WorkflowStep.fields does not list in its references"
        )
        return step
    }

    /// A request's fields (the auth block's login or refresh): method, url, headers, body.
    mutating func request(_ fields: [(key: String, node: Node)], context: FieldContext) -> RequestTemplate? {
        var request = RequestTemplate(url: .empty)
        var usable = true
        for (key, value) in fields {
            guard let field = RequestTemplate.fields.first(where: { $0.name == key }) else { continue }
            usable = field.read(&self, value, &request, context) && usable
        }
        return usable ? request : nil
    }

    /// `method:`, upper-cased.
    mutating func method(_ node: Node, field: String, step: String?) -> HTTPRequest.Method? {
        guard let text = reader.string(node, step: step, field: field) else { return nil }
        guard let method = HTTPRequest.Method(text.uppercased()) else {
            reader.fail(
                .invalidValue, "'\(short: text)' is not an HTTP method (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS…)",
                at: node, step: step, field: field)
            return nil
        }
        return method
    }

    /// `headers:`: names and templates, in file order.
    mutating func headers(_ node: Node, context: FieldContext) -> [(name: String, value: Template)] {
        let field = context.name("headers")
        guard let entries = reader.freeEntries(node, step: context.step, field: field) else { return [] }
        var headers: [(name: String, value: Template)] = []
        for (name, keyNode, valueNode) in entries {
            guard HTTPField.Name(name) != nil else {
                reader.fail(
                    .invalidValue, "'\(short: name)' is not a valid header name", at: keyNode, step: context.step,
                    field: field)
                continue
            }
            if let template = site(
                valueNode, step: context.step, field: "\(field).\(name)", variablesOnly: context.variablesOnly)
            {
                headers.append((name, template))
            }
        }
        return headers
    }

    /// `basic_auth: { user: …, password: … }`, both required, both templates.
    mutating func basicAuth(_ node: Node, context: FieldContext) -> BasicAuth? {
        let field = context.name("basic_auth")
        guard let entries = reader.entries(node, allowed: ["user", "password"], step: context.step, field: field)
        else { return nil }
        var parts: [String: Template] = [:]
        for (key, value) in entries {
            parts[key] = site(value, step: context.step, field: "\(field).\(key)", variablesOnly: context.variablesOnly)
        }
        for key in ["user", "password"] where !entries.contains(where: { $0.key == key }) {
            reader.fail(
                .missingField, "missing '\(key)': basic_auth needs a user and a password", at: node, step: context.step,
                field: "\(field).\(key)")
        }
        guard let user = parts["user"], let password = parts["password"] else { return nil }
        return BasicAuth(user: user, password: password)
    }

    /// `needs:`: step ids, each remembered with where it was written.
    mutating func needs(_ node: Node, step: String) -> [String] {
        var needs: [String] = []
        for element in reader.list(node) {
            guard let name = reader.string(element, step: step, field: "needs") else { continue }
            needs.append(name)
            needSites.append(NeedSite(step: step, need: name, location: NodeReader.location(element)))
        }
        return needs
    }

    /// A template, remembered with where it was written for the reference checks.
    mutating func site(_ node: Node, step: String?, field: String, variablesOnly: Bool) -> Template? {
        guard let template = reader.template(node, step: step, field: field) else { return nil }
        sites.append(
            TemplateSite(
                template: template, step: step, field: field, location: NodeReader.location(node),
                variablesOnly: variablesOnly))
        return template
    }

    mutating func body(_ node: Node, step: String?, field: String, variablesOnly: Bool) -> RequestBody? {
        switch node {
        case .scalar where node.tagName == .null: return nil
        case .scalar: return site(node, step: step, field: field, variablesOnly: variablesOnly).map(RequestBody.text)
        default: return json(node, step: step, field: field, variablesOnly: variablesOnly).map(RequestBody.json)
        }
    }
}
