import Foundation

/// Where a template was written: the checks of its references need its step, field and line.
struct TemplateSite {
    var template: Template
    var step: String?
    var field: String
    var location: SourceLocation?
    /// The auth block's requests run before any step: they may use only variables.
    var variablesOnly: Bool
    /// `when: { exists: … }`: a variable or environment variable it names may be undefined.
    var mayBeUndefined = false
}

/// Where a `needs` entry was written.
struct NeedSite {
    var step: String
    var need: String
    var location: SourceLocation?
}

/// The checks that need the whole workflow: ids, `needs`, template references, cycles and
/// URLs.
struct WorkflowChecker {
    let workflow: Workflow
    let sites: [TemplateSite]
    let needSites: [NeedSite]
    let brokenSteps: Set<String>
    /// Steps with a `for_each` field, where `{{item}}` and `{{index}}` are allowed.
    let forEachSteps: Set<String>
    var reader: NodeReader

    mutating func check() {
        checkIDs()
        checkNeeds()
        checkReferences()
        checkCycles()
        checkURLs()
        checkPolls()
        checkPagination()
    }

    private var ids: [String] { workflow.steps.map(\.id) }

    private func isKnown(_ id: String) -> Bool {
        workflow.position(of: id) != nil || brokenSteps.contains(id)
    }

    private mutating func checkIDs() {
        let steps = workflow.steps
        // By position (iterating would copy each step), and the workflow's index says which
        // step has an id first.
        for position in steps.indices {
            let id = steps[position].id
            let location = steps[position].location
            if let problem = Self.idProblem(id) {
                reader.fail(.invalidValue, problem, at: location, step: id, field: "id")
            } else if id == Template.variablesNamespace || id == Template.environmentNamespace {
                reader.fail(
                    .invalidValue,
                    "'\(short: id)' is reserved for variables ({{vars.NAME}}, {{env.NAME}}); choose another id",
                    at: location, step: id, field: "id")
            } else if id == Template.dataNamespace {
                reader.fail(
                    .invalidValue,
                    "'data' is reserved for the row of a --data run ({{data.COLUMN}}); choose another id",
                    at: location, step: id, field: "id")
            } else if id == Template.cookiesNamespace {
                reader.fail(
                    .invalidValue, "'cookies' is reserved for the cookie jar ({{cookies.NAME}}); choose another id",
                    at: location, step: id, field: "id")
            } else if id == Template.pageNamespace, let paginated = steps.first(where: { $0.paginate != nil }) {
                reader.fail(
                    .invalidValue,
                    "'page' is the page of a paginate step ({{page.number}}, {{page.cursor}}) in this workflow (step '\(short: paginated.id)'); choose another id",
                    at: location, step: id, field: "id")
            } else if id == Template.itemNamespace || id == Template.indexNamespace {
                reader.fail(
                    .invalidValue,
                    "'\(short: id)' is reserved for the element of a for_each step ({{item}}, {{index}}); choose another id",
                    at: location, step: id, field: "id")
            }
            if let first = workflow.position(of: id), first != position {
                let where_ =
                    steps[first].location.map { first in
                        // A step of another file (`include:`) is named with its file.
                        let file = first.file != location?.file ? "in \(short: first.file ?? reader.file ?? "") " : ""
                        return " (first \(file)at line \(first.line))"
                    } ?? ""
                reader.fail(
                    .duplicateStep, "duplicate step id '\(short: id)'\(where_)", at: location, step: id, field: "id")
            }
        }
    }

    /// ASCII letters, digits, `_` and `-` only: most ids, checked without reading characters.
    private static func isPlainID(_ id: String) -> Bool {
        id.utf8.allSatisfy(plainIDCharacters.contains)
    }

    /// Why `id` cannot be a step id, or `nil`: an id uses letters and digits of any script, `_`
    /// and `-`; not an invisible character (`a\u{200B}b`: a format or control character is
    /// not a letter), nor letters of two of the scripts whose letters look alike (Latin,
    /// Greek, Cyrillic, Armenian, Cherokee, fullwidth Latin: Cyrillic 'а' in 'аdmin'), which
    /// would print like another id. The id is quoted escaped (``shownID(_:)``).
    static func idProblem(_ id: String) -> String? {
        guard let reason = invalidity(of: id) else { return nil }
        let shown = "'\(short: escaped(id))'"
        switch reason {
        case .character(let odd):
            return "step ids may use only letters, digits, '_' and '-', got \(shown) (\(describe(odd)))"
        case .grapheme:
            return "step ids may use only letters, digits, '_' and '-', got \(shown)"
        case .scripts(let scripts):
            return
                "step id \(shown) mixes letters of \(scripts.joined(separator: " and ")), which look alike: it would print like another id; write it in one script"
        }
    }

    /// Why an id is refused (see ``idProblem(_:)``).
    private enum Invalidity {
        case character(Unicode.Scalar)
        case grapheme
        case scripts([String])
    }

    private static func invalidity(of id: String) -> Invalidity? {
        if isPlainID(id) { return nil }
        if let odd = id.unicodeScalars.first(where: { !isIDCharacter($0) }) { return .character(odd) }
        if !id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) { return .grapheme }
        let scripts = Set(id.unicodeScalars.compactMap(lookalikeScript))
        return scripts.count > 1 ? .scripts(scripts.sorted()) : nil
    }

    /// Whether `id` is one ``idProblem(_:)`` accepts.
    static func isValidID(_ id: String) -> Bool {
        invalidity(of: id) == nil
    }

    /// A scalar an id may hold: a letter, a mark on it, a digit, `_` or `-`; not a format,
    /// control, space or other invisible character.
    private static func isIDCharacter(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return plainIDCharacters.contains(UInt8(scalar.value)) }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .decimalNumber,
            .letterNumber, .otherNumber, .spacingMark, .nonspacingMark:
            // Zero-width joiners and marks without a letter are refused by the Character check.
            return !scalar.properties.isDefaultIgnorableCodePoint
        default:
            return false
        }
    }

    /// `U+200B, invisible` or `U+0021 '!'`: a character an id may not hold.
    private static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        switch scalar.properties.generalCategory {
        case .format, .control, .spaceSeparator, .lineSeparator, .paragraphSeparator, .nonspacingMark,
            .enclosingMark, .unassigned, .privateUse, .surrogate:
            return "\(code) is invisible"
        default:
            return scalar.properties.isDefaultIgnorableCodePoint
                ? "\(code) is invisible" : "\(code) is not a letter, a digit, '_' or '-'"
        }
    }

    /// The script of a letter whose shapes other scripts share (Latin, Greek, Cyrillic,
    /// Armenian, Cherokee, fullwidth Latin), or `nil` for any other character.
    private static func lookalikeScript(_ scalar: Unicode.Scalar) -> String? {
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A, 0xC0...0x24F, 0x1E00...0x1EFF: "Latin"
        case 0x370...0x3FF, 0x1F00...0x1FFF: "Greek"
        case 0x400...0x52F, 0x1C80...0x1C8F, 0x2DE0...0x2DFF, 0xA640...0xA69F: "Cyrillic"
        case 0x530...0x58F: "Armenian"
        case 0x13A0...0x13FF, 0xAB70...0xABBF: "Cherokee"
        case 0xFF21...0xFF3A, 0xFF41...0xFF5A: "fullwidth Latin"
        default: nil
        }
    }

    /// `id` as messages show a name that should be a step id: as it is if it is a valid id,
    /// else with every character outside printable ASCII escaped as Swift writes it
    /// (`\u{430}dmin`, `a\u{200B}b`), so that it never prints like another id.
    static func shownID(_ id: String) -> String {
        isValidID(id) ? id : escaped(id)
    }

    /// `text` with every character outside printable ASCII (and `\`) escaped as Swift writes it.
    private static func escaped(_ text: String) -> String {
        guard !text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) && $0 != UInt8(ascii: "\\") }) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            if (0x20..<0x7F).contains(scalar.value) && scalar != "\\" {
                shown.unicodeScalars.append(scalar)
            } else {
                shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return shown
    }

    private static let plainIDCharacters = URLCheck.ASCIISet(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

    private mutating func checkNeeds() {
        for site in needSites {
            if site.need == site.step {
                reader.fail(
                    .cycle, "step '\(short: site.step)' needs itself", at: site.location, step: site.step,
                    field: "needs")
            } else if !isKnown(site.need) {
                reader.fail(
                    .unknownStep,
                    "needs '\(short: Self.shownID(site.need))', which is not a step\(suggestion(for: site.need, in: ids))",
                    at: site.location, step: site.step, field: "needs")
            }
        }
    }

    private mutating func checkReferences() {
        for site in sites {
            for reference in site.template.references {
                if reference.isEnvironment {
                    guard workflow.environment[reference.name] == nil, !site.mayBeUndefined else { continue }
                    reader.fail(
                        .unknownVariable,
                        "the environment variable '\(short: reference.name)' in \(short: reference) is not set; set it before running (export \(short: reference.name)=…)",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if reference.isVariable {
                    guard workflow.variables[reference.name] == nil, !site.mayBeUndefined else { continue }
                    let known = workflow.variables.keys.sorted()
                    reader.fail(
                        .unknownVariable,
                        "unknown variable '\(short: reference.name)' in \(short: reference)\(suggestion(for: reference.name, in: known)); define it under 'vars:' or pass --var \(short: reference.name)=VALUE",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if reference.isData {
                    if site.variablesOnly || site.step == nil {
                        reader.fail(
                            .invalidTemplate,
                            "\(short: reference): this field is shared by every row of a --data run; it can use only {{vars.NAME}} and {{env.NAME}}",
                            at: site.location, step: site.step, field: site.field)
                    } else if let columns = workflow.dataColumns {
                        guard !columns.contains(reference.name) else { continue }
                        let list = columns.isEmpty ? "it has none" : "it has \(short: columns.joined(separator: ", "))"
                        reader.fail(
                            .unknownVariable,
                            "\(short: reference): the data file has no column '\(short: reference.name)'\(suggestion(for: reference.name, in: columns)); \(list)",
                            at: site.location, step: site.step, field: site.field)
                    } else {
                        reader.fail(
                            .unknownVariable,
                            "\(short: reference) is a column of a data file: run with --data FILE (a .csv or .json of rows)",
                            at: site.location, step: site.step, field: site.field)
                    }
                } else if reference.isCookie {
                    guard site.variablesOnly || site.step == nil else { continue }
                    reader.fail(
                        .invalidTemplate,
                        "\(short: reference): the cookie jar belongs to the steps; this field can use only {{vars.NAME}} and {{env.NAME}}",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if reference.isPage, let id = site.step, !site.variablesOnly,
                    workflow.step(id)?.paginate != nil || brokenSteps.contains(id)
                {
                    checkPageReference(reference, at: site)
                } else if reference.isElement, site.variablesOnly {
                    reader.fail(
                        .invalidTemplate,
                        "\(short: reference): the auth block runs once, before any step, not once per element; it can use only {{vars.NAME}} and {{env.NAME}}",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if reference.isElement {
                    guard let step = site.step, !forEachSteps.contains(step) else { continue }
                    reader.fail(
                        .invalidTemplate,
                        "\(short: reference) is the current element of a for_each step, but step '\(short: step)' has no for_each (add for_each: \"{{STEP.CAPTURE}}\")",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if site.variablesOnly {
                    reader.fail(
                        .invalidTemplate,
                        "\(short: reference): the auth block runs before any step, so it can use only {{vars.NAME}} and {{env.NAME}}",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if reference.namespace == site.step {
                    reader.fail(
                        .cycle, "\(short: reference) uses the step's own capture", at: site.location, step: site.step,
                        field: site.field)
                } else if let target = workflow.step(reference.namespace) {
                    guard !target.captures.contains(where: { $0.name == reference.name }) else { continue }
                    guard !target.gathersItems(named: reference.name) else { continue }
                    let names = target.captures.map(\.name)
                    let defines =
                        names.isEmpty ? "it captures nothing" : "it captures \(short: names.joined(separator: ", "))"
                    reader.fail(
                        .unknownCapture,
                        "\(short: reference): step '\(short: target.id)' has no capture '\(short: reference.name)'\(suggestion(for: reference.name, in: names)); \(defines)",
                        at: site.location, step: site.step, field: site.field
                    )
                } else if !brokenSteps.contains(reference.namespace) {
                    reader.fail(
                        .unknownStep,
                        "\(short: Self.shownID(reference.description)) names step '\(short: Self.shownID(reference.namespace))', which does not exist\(suggestion(for: reference.namespace, in: ids)) (use {{vars.NAME}} for a variable\(reference.isPage ? "; {{page.number}} and {{page.cursor}} are the page of a step with paginate:" : ""))",
                        at: site.location, step: site.step, field: site.field
                    )
                }
            }
        }
    }

    /// Depth-first search over `needs` and implicit dependencies; reports each cycle once, with
    /// its path (`a → b → c → a`).
    ///
    /// Iterative, with an explicit stack: a chain or a cycle of 100,000 steps is checked in
    /// linear time and constant native stack.
    private mutating func checkCycles() {
        let steps = workflow.steps
        // Steps by position, each with the positions of the steps it depends on (computed
        // once: a step's implicit dependencies come from its templates).
        let dependencies: [[Int]] = steps.indices.map { position in
            steps[position].dependencies.compactMap { id in
                workflow.position(of: id).flatMap { $0 == position ? nil : $0 }
            }
        }
        var state = [VisitState](repeating: .new, count: steps.count)
        var path: [Int] = []
        var positionInPath = [Int](repeating: -1, count: steps.count)
        var reported = Set<Set<Int>>()
        var stack: [(step: Int, next: Int)] = []

        func enter(_ step: Int) {
            state[step] = .onPath
            positionInPath[step] = path.count
            path.append(step)
            stack.append((step, 0))
        }

        for root in steps.indices where state[root] == .new {
            enter(root)
            while let top = stack.indices.last {
                let step = stack[top].step
                guard stack[top].next < dependencies[step].count else {
                    stack.removeLast()
                    path.removeLast()
                    state[step] = .done
                    continue
                }
                let next = dependencies[step][stack[top].next]
                stack[top].next += 1
                switch state[next] {
                case .new:
                    enter(next)
                case .onPath:
                    let cycle = Array(path[positionInPath[next]...]) + [next]
                    guard reported.insert(Set(cycle)).inserted else { continue }
                    reader.fail(
                        .cycle,
                        "the steps depend on each other in a cycle: \(Self.describe(cycle: cycle.reversed().map { steps[$0].id }))",
                        at: steps[next].location, step: steps[next].id, field: "needs"
                    )
                case .done:
                    continue
                }
            }
        }
    }

    private enum VisitState {
        case new, onPath, done
    }

    /// `a → b → c → a`; a long cycle shows its first and last steps and how many are between.
    static func describe(cycle: [String]) -> String {
        let shown =
            cycle.count > 12 ? cycle.prefix(5) + ["… \(cycle.count - 10) more steps …"] + cycle.suffix(5) : cycle[...]
        return shown.map { MessageValue.shortened($0) }.joined(separator: " → ")
    }

    private mutating func checkURLs() {
        var requests: [(request: RequestTemplate, step: String?, field: String)] = workflow.steps.map {
            ($0.request, $0.id, "url")
        }
        if let auth = workflow.auth {
            requests.append((auth.login.request, nil, "auth.login.url"))
            if let refresh = auth.refresh { requests.append((refresh.request, nil, "auth.refresh.url")) }
        }
        for (request, step, field) in requests {
            // A URL that starts with a capture is checked when it is sent.
            if let first = request.url.references.first, !first.isVariable, case .reference = request.url.segments[0] {
                continue
            }
            // Captures and elements are not known yet: a stand-in (a path for a raw one)
            // checks the rest.
            var values = TemplateValues(variables: workflow.variables, environment: workflow.environment)
            values.placeholders = true
            let rendered: String
            do {
                rendered = try request.url.render(for: .url, with: values)
            } catch {
                // A missing value is reported as such elsewhere; a value a filter refuses, or
                // one in the host that is not a host, is the URL's problem.
                if error.reason != nil {
                    reader.fail(
                        .invalidURL, "'\(short: request.url.source)': \(error)", at: request.urlLocation, step: step,
                        field: field)
                }
                continue
            }
            if let problem = URLCheck.problem(with: rendered) {
                // The source has its user information masked already (a credential is never
                // quoted); so has the URL as rendered.
                let rendered = URLCheck.maskingUserInfo(rendered)
                let shown =
                    rendered == request.url.source
                    ? "'\(short: rendered)'" : "'\(short: request.url.source)' (= '\(short: rendered)')"
                reader.fail(
                    .invalidURL, "\(shown) \(short: problem)", at: request.urlLocation, step: step, field: field)
            }
        }
        checkHeaderValues()
    }

    /// A header value with a line break, written in the file or brought by a variable, is
    /// refused now rather than when the step runs (a capture's value is checked then).
    private mutating func checkHeaderValues() {
        var values = TemplateValues(variables: workflow.variables, environment: workflow.environment)
        values.placeholders = true
        for step in workflow.steps {
            for header in step.request.headers {
                guard let rendered = try? header.value.render(for: .text, with: values),
                    rendered.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" })
                else { continue }
                reader.fail(
                    .invalidValue,
                    "header '\(short: header.name)' has a line break in its value, which would end the header; remove it",
                    at: step.location, step: step.id, field: "headers.\(header.name)"
                )
            }
        }
    }

    private func suggestion(for name: String, in candidates: [String]) -> String {
        NodeReader.closest(to: name, in: candidates).map { " (did you mean '\(short: Self.shownID($0))'?)" } ?? ""
    }
}

/// What makes a URL sendable: an http or https scheme and a host, and how it is written on
/// the wire (``escaped(_:)``).
enum URLCheck {
    /// Why `text` cannot be sent, or `nil` if it can (once ``escaped(_:)``).
    static func problem(with text: String) -> String? {
        isPlainlyValid(text) ? nil : fullCheck(text)
    }

    /// `text` as it is sent, or why it cannot be sent (the reason ``problem(with:)`` gives).
    /// A URL that passes the one-pass check is sent as written: escaping would not change it
    /// (`URLEscapingTests` checks both on random URLs), so neither the full check nor
    /// ``escaped(_:)`` runs for it, on every request a step sends.
    static func sendable(_ text: String) -> Result<String, Refusal> {
        if isPlainlyValid(text) { return .success(text) }
        if let problem = fullCheck(text) { return .failure(Refusal(reason: problem)) }
        return .success(escaped(text))
    }

    /// Why a URL cannot be sent.
    struct Refusal: Error {
        let reason: String
    }

    /// ``problem(with:)`` without the fast path: the text escaped, then read by
    /// `URLComponents`.
    static func fullCheck(_ text: String) -> String? {
        guard
            !text.utf8.contains(where: {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r")
                    || $0 == UInt8(ascii: "\t")
            })
        else {
            return "contains a space or a line break"
        }
        let escaped = escaped(text)
        guard escaped.utf8.allSatisfy({ $0 < 0x80 }) else {
            return "has a host with non-ASCII letters that is not a valid internationalized domain name"
        }
        guard let components = URLComponents(string: escaped) else { return "is not a valid URL" }
        guard let scheme = components.scheme?.lowercased() else {
            return "is not an absolute URL: it must start with http:// or https://"
        }
        guard scheme == "http" || scheme == "https" else {
            return "has the scheme '\(scheme)'; only http and https are supported"
        }
        guard let host = components.host, !host.isEmpty else { return "has no host" }
        // The host as it goes out: its IDNA form (`xn--bcher-kva.example`), which
        // `percentEncodedHost` turns back into escaped Unicode on Linux.
        if let problem = unresolvableHostProblem(components.encodedHost ?? components.percentEncodedHost ?? host) {
            return problem
        }
        if let port = components.port, !(1...65_535).contains(port) { return "has port \(port); a port is 1 to 65535" }
        return nil
    }

    /// Whether `text` is an http(s) URL that needs no escaping and no closer look: a
    /// lowercase scheme, a host of ASCII letters, digits, `.` and `-`, a port from 1 to 65535,
    /// and only characters a query allows after it (no `%`, no `#`). Most URLs are; the others
    /// take the full check. One pass over the bytes.
    static func isPlainlyValid(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if bytes.starts(with: "http://".utf8) {
            bytes = bytes.dropFirst(7)
        } else if bytes.starts(with: "https://".utf8) {
            bytes = bytes.dropFirst(8)
        } else {
            return false
        }
        let hostEnd = bytes.firstIndex { !hostCharacters.contains($0) } ?? bytes.endIndex
        guard hostEnd != bytes.startIndex else { return false }
        bytes = bytes[hostEnd...]
        if bytes.first == UInt8(ascii: ":") {
            bytes = bytes.dropFirst()
            let portEnd = bytes.firstIndex { !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? bytes.endIndex
            let digits = bytes[..<portEnd]
            guard (1...5).contains(digits.count), let port = Int(String(decoding: digits, as: UTF8.self)),
                (1...65_535).contains(port)
            else { return false }
            bytes = bytes[portEnd...]
        }
        guard bytes.isEmpty || bytes.first == UInt8(ascii: "/") || bytes.first == UInt8(ascii: "?") else {
            return false
        }
        return bytes.allSatisfy(queryCharacters.contains)
    }

    private static let hostCharacters = ASCIISet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
}
