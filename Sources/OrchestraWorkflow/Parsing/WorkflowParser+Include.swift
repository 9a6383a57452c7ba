import Foundation

/// `include:`: the files a workflow file includes, read before its own steps.
///
/// ```yaml
/// include:
///   - login.yaml                                          # its steps keep their ids
///   - { file: login.yaml, prefix: admin_, vars: { user: admin } }   # admin_login, {{vars.admin_user}}
/// ```
///
/// The rules (Examples/README.md, "Including other files"):
/// - An included file's steps run as if written in the including file, before its own (it may
///   have none, and bring only `vars:`, `secrets:` and an `auth:` block). A path
///   is relative to the file that names it, and so are the paths inside the included file
///   (`body_file:`, `multipart:` files, its own `include:`).
/// - Its `vars:` are defaults: the including file's `vars:` and `--var` override them. Two
///   included files that give one variable different defaults is an error, unless the
///   including file sets it.
/// - `prefix:` renames the file's steps and the variables its `vars:` declares (and those of
///   the files it includes): `admin_login`, `{{vars.admin_user}}`; every step id it
///   names, in `needs:` and in templates, is one of its own. Such a variable takes, in order:
///   `admin_user` from the entry's `vars:`, the including file or `--var`; else `user` from
///   the including file or `--var`; else the file's default. A file included twice needs a prefix at least once; the same file included
///   again with the same prefix (`b.yaml` and `c.yaml` both include `login.yaml`) is read once.
/// - `secrets:` add up over all files; `auth:` and `basic_auth:` may be given in one file
///   only; `name`, `limit`, `rate`, `burst`, `hosts`, `failure`, `follow_redirects`,
///   `cookies` and `tls` are the top file's (an included file's apply when it runs alone).
/// - Bounds: ``maximumDepth`` files deep, ``maximumFiles`` files in all, their bytes together
///   at most ``Workflow/inputFileLimit`` (as one file); a cycle or a missing file is an error
///   naming the chain of includes (`a.yaml → b.yaml → a.yaml`).
struct WorkflowInclusion {
    /// The deepest chain of includes: the top file includes one that includes one… 16 deep.
    static let maximumDepth = 16
    /// The most files one workflow reads through `include:`, all levels together.
    static let maximumFiles = 256

    /// The files from the top file to this one: canonical paths (for cycles) and names as
    /// messages show them.
    var chain: [(path: String, name: String)] = []
    /// The prefix every step id and declared variable of this file gets (its entry's and
    /// those of the entries above it).
    var prefix = ""
    /// Whether this parser reads an included file: it returns its workflow unchecked, for the
    /// including file to check the whole tree.
    var isIncluded = false
    /// Files read so far in the whole tree (shared down and back up): `path` + prefix.
    var seen: Set<String> = []
    /// The including file's variables (its `vars:` and what overrides them): with a prefix,
    /// a variable of the same name gives its value to this file's `admin_NAME` (which the
    /// entry's `vars:` or `admin_NAME` itself still overrides), so that `--var base=…` reaches
    /// every copy.
    var inherited: [String: String] = [:]
    /// With a prefix: the variables the files this one includes declare
    /// (``declaredVariables(includedBy:directory:budget:)``), renamed in this file as its own are.
    var declaredBelow: Set<String> = []
    /// The bytes of the included files read so far in the whole tree (shared down and back
    /// up): at most ``Workflow/inputFileLimit`` in all, as for one file.
    var bytesRead = 0
    /// What the look-ahead for declared variables may still read, in the whole tree (shared
    /// down and back up).
    var lookAhead = (files: maximumFiles, bytes: Workflow.inputFileLimit)
    /// What the included files brought, merged into the workflow after its own steps are read.
    var steps: [WorkflowStep] = []
    var secretValues: [String] = []
    var auth: WorkflowAuth?
    var basicAuth: (value: BasicAuth, file: String)?
    /// Each copy of a file read, with its own steps' ids (``Workflow/includedFiles``).
    var copies: [(name: String, steps: [String])] = []
    /// The SHA-256 of every included file's text, in the order read (for `--state`).
    var digests: [String] = []
    /// Whether the file has an `include:` field.
    var includesFiles = false

    /// The digest of the top file's `text` and every file it includes.
    func digest(of text: String) -> String {
        digests.isEmpty ? text.sha256Hex : ([text.sha256Hex] + digests).joined(separator: "\n").sha256Hex
    }

    /// The chain of includes as messages show it, ending with `name`.
    func shownChain(to name: String) -> String {
        (chain.map(\.name) + [name]).map { "\(short: $0)" }.joined(separator: " → ")
    }
}

extension WorkflowParser {
    /// Reads the files `include:` names (when the top level has one): each with its own
    /// parser, their problems kept with their own file, line and column; their variables'
    /// defaults merged into `workflow` under its own. The rest is merged by
    /// ``mergeIncluded(into:)`` once the file's own steps are read.
    mutating func includeFiles(_ fields: [(key: String, node: Node)], into workflow: inout Workflow) {
        guard let node = fields.first(where: { $0.key == "include" })?.node else { return }
        inclusion.includesFiles = true
        if inclusion.chain.isEmpty {
            let name = reader.file ?? "workflow"
            let path = directory.appendingPathComponent((name as NSString).lastPathComponent).path
            inclusion.chain = [(Self.canonicalPath(path), name)]
        }
        let own = workflow.variables
        var defaults: [String: (value: String, file: String)] = [:]
        for element in reader.list(node) {
            guard let entry = includeEntry(element) else { continue }
            guard let included = include(entry, at: element, variables: own) else { continue }
            for (name, value) in included.variables where own[name] == nil {
                if let earlier = defaults[name], earlier.value != value {
                    reader.fail(
                        .invalidValue,
                        "variable '\(short: name)' has the default '\(short: value)' in \(short: entry.name) and '\(short: earlier.value)' in \(short: earlier.file): set it in this file's vars: or with --var",
                        at: element, field: "include")
                    continue
                }
                defaults[name] = (value, entry.name)
                workflow.variables[name] = value
            }
        }
    }

    /// Puts what the included files brought into `workflow`: their steps before its own, their
    /// secrets with its own, their `auth:` or `basic_auth:` if it has none (two is an error
    /// naming both files).
    mutating func mergeIncluded(into workflow: inout Workflow) {
        guard inclusion.includesFiles else { return }
        workflow.steps = inclusion.steps + workflow.steps
        workflow.includedFiles = inclusion.copies
        workflow.secretValues += inclusion.secretValues
        secretValues = workflow.secretValues
        let file = reader.file ?? "the including file"
        if let auth = inclusion.auth {
            if let own = workflow.auth {
                reader.fail(
                    .invalidValue,
                    "auth: is given here and in \(short: auth.location?.file ?? "an included file")\(Self.line(auth.location)); a run has one auth: block: keep one",
                    at: own.location, field: "auth")
            } else {
                workflow.auth = auth
            }
        }
        if let basic = inclusion.basicAuth {
            if workflow.basicAuth != nil {
                reader.fail(
                    .invalidValue,
                    "basic_auth: is given in \(short: file) and in \(short: basic.file); a run has one top-level basic_auth: keep one",
                    at: SourceLocation?.none, field: "basic_auth")
            } else {
                workflow.basicAuth = basic.value
            }
        }
    }

    /// ` (line 3)`, or nothing.
    private static func line(_ location: SourceLocation?) -> String {
        location.map { " (line \($0.line))" } ?? ""
    }

    /// An entry of `include:`, read.
    struct IncludeEntry {
        /// As written.
        var path: String
        /// As messages show it: relative to the including file's name.
        var name: String
        var url: URL
        var prefix: String
        var variables: [String: String]
    }

    /// `login.yaml` or `{ file: login.yaml, prefix: admin_, vars: { user: admin } }`.
    private mutating func includeEntry(_ node: Node) -> IncludeEntry? {
        var pathNode = node
        var prefix = ""
        var variables: [String: String] = [:]
        if case .mapping = node {
            guard
                let fields = reader.entries(
                    node, allowed: ["file", "prefix", "vars"], step: nil, field: "include",
                    hint: "; an entry is a path or { file: PATH, prefix: NAME_, vars: {…} }")
            else { return nil }
            guard let file = fields.first(where: { $0.key == "file" })?.node else {
                reader.fail(
                    .missingField, "missing 'file': an entry is a path or { file: PATH, prefix: NAME_ }", at: node,
                    field: "include.file")
                return nil
            }
            pathNode = file
            if let node = fields.first(where: { $0.key == "prefix" })?.node {
                guard let text = reader.string(node, step: nil, field: "include.prefix") else { return nil }
                guard !text.isEmpty, WorkflowChecker.isValidID(text) else {
                    reader.fail(
                        .invalidValue,
                        "the prefix '\(short: text)' must be letters, digits, '_' and '-', as in admin_ (it starts step ids)",
                        at: node, field: "include.prefix")
                    return nil
                }
                prefix = text
            }
            if let node = fields.first(where: { $0.key == "vars" })?.node {
                guard !prefix.isEmpty else {
                    reader.fail(
                        .invalidValue,
                        "vars: of an include needs a prefix: without one the file's variables are the run's; set them under this file's vars:",
                        at: node, field: "include.vars")
                    return nil
                }
                guard let entries = reader.freeEntries(node, step: nil, field: "include.vars") else { return nil }
                for (name, _, value) in entries {
                    if let text = reader.string(value, step: nil, field: "include.vars.\(name)") {
                        variables[name] = text
                    }
                }
            }
        }
        guard let path = reader.string(pathNode, step: nil, field: "include") else { return nil }
        guard !path.isEmpty, !path.contains("{{") else {
            reader.fail(
                .invalidValue,
                path.isEmpty
                    ? "an empty path: name a workflow file, as in login.yaml"
                    : "'\(short: path)': an include's path is read before any variable; write it without templates",
                at: pathNode, field: "include")
            return nil
        }
        // As a folder, whether or not the URL given ends with '/'.
        let folderURL = URL(fileURLWithPath: directory.path, isDirectory: true)
        let url = URL(fileURLWithPath: path, relativeTo: folderURL).standardizedFileURL
        let folder = ((reader.file ?? "") as NSString).deletingLastPathComponent
        let name =
            path.hasPrefix("/") || folder.isEmpty || reader.file?.hasPrefix("/dev/") == true
            ? path : ((folder as NSString).appendingPathComponent(path) as NSString).standardizingPath
        return IncludeEntry(path: path, name: name, url: url, prefix: prefix, variables: variables)
    }

    /// Reads and parses one included file; `nil` after reporting why it cannot be.
    private mutating func include(
        _ entry: IncludeEntry, at node: Node, variables own: [String: String]
    ) -> Workflow? {
        let path = Self.canonicalPath(entry.url.path)
        let prefix = inclusion.prefix + entry.prefix
        if inclusion.chain.contains(where: { $0.path == path }) {
            reader.fail(
                .cycle, "the files include each other in a cycle: \(inclusion.shownChain(to: entry.name))", at: node,
                field: "include")
            return nil
        }
        guard inclusion.chain.count < WorkflowInclusion.maximumDepth else {
            reader.fail(
                .invalidValue,
                "includes are nested more than \(WorkflowInclusion.maximumDepth) files deep: \(inclusion.shownChain(to: entry.name))",
                at: node, field: "include")
            return nil
        }
        // Included again with the same prefix (two files include one login): read once.
        guard !inclusion.seen.contains(path + "\u{0}" + prefix) else { return nil }
        guard inclusion.seen.count < WorkflowInclusion.maximumFiles else {
            reader.fail(
                .invalidValue,
                "a workflow may include at most \(WorkflowInclusion.maximumFiles) files in all; \(short: entry.name) would be one more",
                at: node, field: "include")
            return nil
        }
        inclusion.seen.insert(path + "\u{0}" + prefix)
        let text: String
        do {
            text = try Workflow.readText(
                at: entry.url.path, file: entry.name, kind: "included file",
                empty: "is empty; an included file needs at least 'steps'")
        } catch {
            let reasons = error.errors.map(\.message).joined(separator: "; ")
            reader.fail(
                .unreadable,
                "cannot include \(short: entry.name): \(reasons) (\(inclusion.shownChain(to: entry.name)))",
                at: node, field: "include")
            return nil
        }
        inclusion.bytesRead += text.utf8.count
        guard inclusion.bytesRead <= Workflow.inputFileLimit else {
            reader.fail(
                .unreadable,
                "cannot include \(short: entry.name): the included files add up to more than \(Workflow.inputFileLimit) bytes (the limit of an input file)",
                at: node, field: "include")
            return nil
        }
        var overrides = own
        // The entry's vars: are written in this file: what overrides it (--var) beats them.
        for (name, value) in entry.variables where self.overrides[prefix + name] == nil {
            overrides[prefix + name] = value
        }
        var declaredBelow: Set<String> = []
        if !prefix.isEmpty, case .document(let document?) = YAMLComposer.compose(text) {
            declaredBelow = WorkflowInclusion.declaredVariables(
                includedBy: document, directory: entry.url.deletingLastPathComponent(), budget: &inclusion.lookAhead)
        }
        var child = WorkflowParser(
            file: entry.name, overrides: overrides, environment: environment,
            directory: entry.url.deletingLastPathComponent())
        child.dataColumns = dataColumns
        child.inclusion = WorkflowInclusion(
            chain: inclusion.chain + [(path, entry.name)], prefix: prefix, isIncluded: true, seen: inclusion.seen,
            inherited: own, declaredBelow: declaredBelow, bytesRead: inclusion.bytesRead,
            lookAhead: inclusion.lookAhead)
        let workflow = child.parse(text)
        inclusion.seen = child.inclusion.seen
        inclusion.bytesRead = child.inclusion.bytesRead
        inclusion.lookAhead = child.inclusion.lookAhead
        reader.adopt(child.reader.errors)
        sites += child.sites
        // A prefixed copy's variable that takes the including file's value of its plain name
        // uses that name: `--var base=…` is then no unused --var.
        if !prefix.isEmpty {
            let used = Set(child.sites.flatMap { $0.template.references.filter(\.isVariable).map(\.name) })
            for name in own.keys.sorted()
            where used.contains(prefix + name) && own[prefix + name] == nil && entry.variables[name] == nil {
                guard let template = try? Template(parsing: "{{vars.\(name)}}") else { continue }
                sites.append(
                    TemplateSite(
                        template: template, step: nil, field: "include", location: NodeReader.location(node),
                        variablesOnly: true))
            }
        }
        needSites += child.needSites
        brokenSteps.formUnion(child.brokenSteps)
        forEachSteps.formUnion(child.forEachSteps)
        inclusion.digests += [text.sha256Hex] + child.inclusion.digests
        guard let workflow else { return nil }
        inclusion.copies +=
            child.inclusion.copies + [
                (
                    prefix.isEmpty ? entry.name : "\(entry.name) as \(prefix)",
                    workflow.steps.dropFirst(child.inclusion.steps.count).map(\.id)
                )
            ]
        inclusion.steps += workflow.steps
        inclusion.secretValues += workflow.secretValues
        if let auth = workflow.auth {
            if let earlier = inclusion.auth {
                reader.fail(
                    .invalidValue,
                    "auth: is given in \(short: earlier.location?.file ?? "an included file")\(Self.line(earlier.location)) and in \(short: auth.location?.file ?? entry.name)\(Self.line(auth.location)); a run has one auth: block: keep one",
                    at: node, field: "include")
            } else {
                inclusion.auth = auth
            }
        }
        if let basic = workflow.basicAuth {
            if let earlier = inclusion.basicAuth {
                reader.fail(
                    .invalidValue,
                    "basic_auth: is given in \(short: earlier.file) and in \(short: entry.name); a run has one top-level basic_auth: keep one",
                    at: node, field: "include")
            } else {
                inclusion.basicAuth = (basic, entry.name)
            }
        }
        return workflow
    }

    /// `path` with `.`, `..` and symbolic links resolved: one file reached two ways is one.
    static func canonicalPath(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }
}
