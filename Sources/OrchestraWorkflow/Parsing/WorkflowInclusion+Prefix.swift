import Foundation

extension WorkflowInclusion {
    /// An included file's node tree as the parser reads it: every place marked with the
    /// file's name (so that a problem found later, by the checks of the whole tree, names it),
    /// and with a ``prefix``, its step ids, `needs:`, the variables its `vars:` declares and
    /// every use of them renamed (`login` → `admin_login`, `{{login.token}}` →
    /// `{{admin_login.token}}`, `{{vars.user}}` → `{{vars.admin_user}}`).
    ///
    /// Complexity: linear in the nodes; iterative (nesting is bounded by libyaml, not by the
    /// native stack).
    func prepared(_ root: Node, file: String) -> Node {
        var root = root
        // The variables the files it includes declare are prefixed with theirs: its uses too.
        var declared = declaredBelow
        if !prefix.isEmpty, case .mapping(var mapping) = root {
            if let vars = mapping.pairs.firstIndex(where: { Self.text($0.key) == "vars" }),
                case .mapping(var variables) = mapping.pairs[vars].value
            {
                for index in variables.pairs.indices {
                    guard case .scalar(var key) = variables.pairs[index].key else { continue }
                    declared.insert(key.string)
                    if let value = inherited[key.string], case .scalar(var scalar) = variables.pairs[index].value {
                        scalar.string = value
                        scalar.tag = .str
                        variables.pairs[index].value = .scalar(scalar)
                    }
                    key.string = prefix + key.string
                    variables.pairs[index].key = .scalar(key)
                }
                mapping.pairs[vars].value = .mapping(variables)
            }
            for index in mapping.pairs.indices {
                switch Self.text(mapping.pairs[index].key) {
                case "secrets":
                    mapping.pairs[index].value = renaming(mapping.pairs[index].value) { declared.contains($0) }
                case "steps":
                    guard case .sequence(var steps) = mapping.pairs[index].value else { continue }
                    for position in steps.nodes.indices {
                        guard case .mapping(var step) = steps.nodes[position] else { continue }
                        for field in step.pairs.indices
                        where ["id", "needs"].contains(Self.text(step.pairs[field].key)) {
                            step.pairs[field].value = renaming(step.pairs[field].value) { _ in true }
                        }
                        steps.nodes[position] = .mapping(step)
                    }
                    mapping.pairs[index].value = .sequence(steps)
                default:
                    continue
                }
            }
            root = .mapping(mapping)
        }
        return Self.map(root, file: file) { scalar, isKey in
            guard !isKey, !prefix.isEmpty, scalar.string.contains("{{") else { return }
            scalar.string = renamingReferences(in: scalar.string, declared: declared)
        }
    }

    /// The variables declared (`vars:`) by the files `root` includes without a prefix of their
    /// own, and by theirs, read ahead of the real parse (which reports any problem): with a
    /// prefix they are renamed with the file's, and so are the file's uses of them. Bounded as
    /// includes are (``maximumDepth`` deep, each file at most an input file), and by `budget`,
    /// shared by every look-ahead of a workflow: once it is spent, no more is read (a name then
    /// missed is an unknown variable, reported).
    static func declaredVariables(
        includedBy root: Node, directory: URL, budget: inout (files: Int, bytes: Int)
    ) -> Set<String> {
        var declared: Set<String> = []
        var pending: [(node: Node, directory: URL, depth: Int)] = [(root, directory, 0)]
        while let (node, folder, depth) = pending.popLast() {
            guard case .mapping(let mapping) = node, depth < maximumDepth else { continue }
            for (key, value) in mapping.pairs {
                switch text(key) {
                case "vars" where depth > 0:
                    guard case .mapping(let variables) = value else { continue }
                    declared.formUnion(variables.pairs.compactMap { text($0.key) })
                case "include":
                    let entries: [Node] = if case .sequence(let list) = value { list.nodes } else { [value] }
                    for entry in entries {
                        var path = text(entry)
                        if case .mapping(let fields) = entry {
                            // An entry with a prefix of its own renames its variables with it.
                            guard !fields.pairs.contains(where: { text($0.key) == "prefix" }) else { continue }
                            path = fields.pairs.first { text($0.key) == "file" }.flatMap { text($0.value) }
                        }
                        guard let path, !path.isEmpty, budget.files > 0, budget.bytes > 0 else { continue }
                        budget.files -= 1
                        let url = URL(
                            fileURLWithPath: path, relativeTo: URL(fileURLWithPath: folder.path, isDirectory: true)
                        ).standardizedFileURL
                        guard let text = try? Workflow.readText(at: url.path, file: path) else { continue }
                        budget.bytes -= text.utf8.count
                        guard budget.bytes >= 0, case .document(let document?) = YAMLComposer.compose(text) else {
                            continue
                        }
                        pending.append((document, url.deletingLastPathComponent(), depth + 1))
                    }
                default:
                    continue
                }
            }
        }
        return declared
    }

    /// `text` with its step references (`{{login.token}}`) and its references to `declared`
    /// variables prefixed; as it is when nothing changes or it is not a template (the parser
    /// reports that).
    func renamingReferences(in text: String, declared: Set<String>) -> String {
        guard let template = try? Template(parsing: text) else { return text }
        var changed = false
        var renamed = ""
        for segment in template.segments {
            switch segment {
            case .literal(let literal):
                renamed += literal
            case .reference(var reference):
                if reference.isVariable, declared.contains(reference.name) {
                    reference.name = prefix + reference.name
                    changed = true
                } else if reference.isCapture, !(reference.isPage && ["number", "cursor"].contains(reference.name)) {
                    // (`{{page.number}}` and `{{page.cursor}}` are a paginate step's page.)
                    reference.namespace = prefix + reference.namespace
                    changed = true
                }
                renamed += reference.description
            }
        }
        return changed ? renamed : text
    }

    /// A scalar, or each scalar of a list, prefixed where `renames` says.
    private func renaming(_ node: Node, where renames: (String) -> Bool) -> Node {
        func renamed(_ node: Node) -> Node {
            guard case .scalar(var scalar) = node, renames(scalar.string) else { return node }
            scalar.string = prefix + scalar.string
            return .scalar(scalar)
        }
        guard case .sequence(var sequence) = node else { return renamed(node) }
        sequence.nodes = sequence.nodes.map(renamed)
        return .sequence(sequence)
    }

    static func text(_ node: Node) -> String? {
        if case .scalar(let scalar) = node { scalar.string } else { nil }
    }

    /// The tree with every node's mark given `file`, and every scalar passed to `change`
    /// (with whether it is a mapping's key).
    static func map(_ root: Node, file: String, _ change: (inout YAMLNode.Scalar, _ isKey: Bool) -> Void) -> Node {
        /// A list or mapping whose children are being mapped.
        struct Open {
            var node: Node
            var children: [(key: Node?, value: Node)]
            var done: [(key: Node?, value: Node)] = []
        }
        func marked(_ mark: SourceLocation?) -> SourceLocation? {
            mark.map { SourceLocation(line: $0.line, column: $0.column, file: file) }
        }
        func leaf(_ scalar: YAMLNode.Scalar, isKey: Bool) -> Node {
            var scalar = scalar
            scalar.mark = marked(scalar.mark)
            change(&scalar, isKey)
            return .scalar(scalar)
        }
        func closed(_ open: Open) -> Node {
            switch open.node {
            case .mapping(var mapping):
                mapping.mark = marked(mapping.mark)
                mapping.pairs = open.done.map { ($0.key!, $0.value) }
                return .mapping(mapping)
            case .sequence(var sequence):
                sequence.mark = marked(sequence.mark)
                sequence.nodes = open.done.map(\.value)
                return .sequence(sequence)
            case .scalar:
                return open.node
            }
        }
        var stack: [Open] = []
        var current = root
        while true {
            var finished: Node
            switch current {
            case .scalar(let scalar):
                finished = leaf(scalar, isKey: false)
            case .mapping(let mapping):
                let open = Open(node: current, children: mapping.pairs.map { ($0.key, $0.value) })
                guard let first = open.children.first else {
                    finished = closed(open)
                    break
                }
                stack.append(open)
                current = first.value
                continue
            case .sequence(let sequence):
                let open = Open(node: current, children: sequence.nodes.map { (nil, $0) })
                guard let first = open.children.first else {
                    finished = closed(open)
                    break
                }
                stack.append(open)
                current = first.value
                continue
            }
            // Hand the finished node to its parent; close every parent it completes.
            while true {
                guard var top = stack.popLast() else { return finished }
                var key = top.children[top.done.count].key
                if case .scalar(let scalar)? = key { key = leaf(scalar, isKey: true) }
                top.done.append((key, finished))
                if top.done.count < top.children.count {
                    current = top.children[top.done.count].value
                    stack.append(top)
                    break
                }
                finished = closed(top)
            }
        }
    }
}
