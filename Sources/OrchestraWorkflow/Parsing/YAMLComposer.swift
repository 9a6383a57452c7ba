// libyaml's event parser, the one Yams is built on (Yams' own event API is private).
import CYaml
import Yams

/// Composes a workflow file's YAML into ``YAMLNode``s in one pass over libyaml's events, and
/// finds what Yams' composer cannot report well:
///
/// - **Aliases that expand too far.** `*name` repeats the whole node anchored as `&name`, so ten
///   levels of ten aliases each stand for 10¹⁰ values in a file under 1 KB. The nodes are
///   shared, but every reader of the tree walks them all. The composer knows each anchored
///   node's expanded size when the node ends, and stops at the first alias that takes the
///   values repeated by aliases past ``aliasBudget``, naming its line.
/// - **Every key given twice.** Yams throws at the first mapping that has one and names only
///   the first key's line; the composer reports each later occurrence at its own line, with
///   the line of the first.
///
/// Why not `Yams.compose`: besides the two above, it allocates an object per event and a tag
/// object per node, and hashes every mapping's keys as nodes to find duplicates; on a
/// 100,000-step file that was over a third of `orchestra validate`'s time.
///
/// A text libyaml refuses is ``Outcome/syntaxError``: the caller asks Yams for its error (the
/// same libyaml, so the same message and line). Iterative: nesting is bounded by libyaml, not
/// by the native stack.
enum YAMLComposer {
    /// At most this many values may be repeated by aliases, over the whole file.
    static let aliasBudget = 1_000_000

    struct Problem: Equatable {
        var message: String
        var line: Int
        var column: Int
    }

    enum Outcome {
        /// The document's root; `nil` for a text with no document (empty, or only comments).
        case document(Node?)
        /// Duplicate keys (all of them) or an alias bomb (the first alias past the budget).
        case problems([Problem])
        /// libyaml refused the text, or it has an undefined alias or a second document: Yams
        /// says why.
        case syntaxError
    }

    static func compose(_ text: String) -> Outcome {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return .syntaxError }
        defer { yaml_parser_delete(&parser) }
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var composer = Composer()
            return composer.run(&parser)
        }
    }

    private struct Composer {
        /// A list or mapping being read.
        struct Open {
            var isMapping: Bool
            var anchor: String?
            var tag: Tag.Name
            var mark: SourceLocation
            /// Values in its expansion so far, itself included.
            var size = 1
            var nodes: [Node] = []
            /// A mapping's scalar keys so far with their lines (filled only past a few keys).
            var keyLines: [String: Int] = [:]
        }

        var problems: [Problem] = []
        var anchors: [String: (node: Node, size: Int)] = [:]
        var stack: [Open] = []
        var repeated = 0
        var root: Node?
        mutating func run(_ parser: inout yaml_parser_t) -> Outcome {
            var documents = 0
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return .syntaxError }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                let column = Int(event.start_mark.column) + 1
                var ended: (node: Node, size: Int, anchor: String?)
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return problems.isEmpty ? .document(root) : .problems(problems)
                case YAML_DOCUMENT_START_EVENT:
                    documents += 1
                    guard documents == 1 else { return .syntaxError }
                    continue
                case YAML_SCALAR_EVENT:
                    let scalar = event.data.scalar
                    let value = String(
                        decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                    let tag = scalar.quoted_implicit == 1 ? Tag.Name.str : tag(scalar.tag)
                    let style = Yams.Node.Scalar.Style(rawValue: numericCast(scalar.style.rawValue)) ?? .any
                    let node = Node.scalar(
                        Node.Scalar(
                            string: value, tag: tag, style: style, mark: SourceLocation(line: line, column: column)))
                    ended = (node, 1, Self.string(scalar.anchor))
                case YAML_ALIAS_EVENT:
                    guard let anchor = Self.string(event.data.alias.anchor), let target = anchors[anchor] else {
                        return .syntaxError
                    }
                    repeated += target.size
                    guard repeated <= YAMLComposer.aliasBudget else {
                        problems.append(
                            Problem(
                                message:
                                    "aliases would repeat more than \(YAMLComposer.aliasBudget) values (this *\(short: anchor) repeats \(target.size)); an alias bomb is refused: anchor smaller values or write them out",
                                line: line, column: column
                            ))
                        return .problems(problems)
                    }
                    ended = (target.node, target.size, nil)
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    let isMapping = event.type == YAML_MAPPING_START_EVENT
                    let (anchor, written, implicit) =
                        isMapping
                        ? (
                            event.data.mapping_start.anchor, event.data.mapping_start.tag,
                            event.data.mapping_start.implicit
                        )
                        : (
                            event.data.sequence_start.anchor, event.data.sequence_start.tag,
                            event.data.sequence_start.implicit
                        )
                    stack.append(
                        Open(
                            isMapping: isMapping, anchor: Self.string(anchor),
                            tag: implicit != 0 ? .implicit : tag(written),
                            mark: SourceLocation(line: line, column: column)
                        ))
                    continue
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    guard let open = stack.popLast() else { return .syntaxError }
                    ended = (close(open), open.size, open.anchor)
                default:
                    continue
                }
                if let anchor = ended.anchor { anchors[anchor] = (ended.node, ended.size) }
                guard let top = stack.indices.last else {
                    root = ended.node
                    continue
                }
                stack[top].size = min(stack[top].size + ended.size, Int.max / 2)
                let position = stack[top].nodes.count
                if stack[top].isMapping, position % 2 == 0 {
                    if case .scalar(let key) = ended.node {
                        checkKey(key.string, at: position, line: line, column: column, in: top)
                    }
                    // A key is text (as Yams leaves it: hashing a key resolves its tags in place).
                    stack[top].nodes.append(YAMLComposer.resolvedAsKey(ended.node))
                    continue
                }
                stack[top].nodes.append(ended.node)
            }
        }

        /// Reports `key` if the mapping at `top` has it already. A few keys are compared one by
        /// one; past that they are indexed.
        mutating func checkKey(_ key: String, at position: Int, line: Int, column: Int, in top: Int) {
            var first: Int?
            if position < 16 {
                for earlier in stride(from: 0, to: position, by: 2) {
                    if case .scalar(let other) = stack[top].nodes[earlier], other.string == key {
                        first = other.mark?.line ?? line
                        break
                    }
                }
            } else {
                if stack[top].keyLines.isEmpty {
                    for earlier in stride(from: 0, to: position, by: 2) {
                        if case .scalar(let other) = stack[top].nodes[earlier], stack[top].keyLines[other.string] == nil
                        {
                            stack[top].keyLines[other.string] = other.mark?.line ?? 0
                        }
                    }
                }
                first = stack[top].keyLines[key]
                if first == nil { stack[top].keyLines[key] = line }
            }
            guard let first else { return }
            problems.append(
                Problem(
                    message:
                        "the key '\(short: key)' is given twice in one mapping (first at line \(first)); remove one",
                    line: line, column: column
                ))
        }

        func close(_ open: Open) -> Node {
            guard open.isMapping else {
                return .sequence(Node.Sequence(nodes: open.nodes, tag: open.tag, mark: open.mark))
            }
            var pairs: [(key: Node, value: Node)] = []
            pairs.reserveCapacity(open.nodes.count / 2)
            var index = 0
            while index + 1 < open.nodes.count {
                pairs.append((open.nodes[index], open.nodes[index + 1]))
                index += 2
            }
            return .mapping(Node.Mapping(pairs: pairs, tag: open.tag, mark: open.mark))
        }

        func tag(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> Tag.Name {
            Self.string(pointer).map(Tag.Name.init(rawValue:)) ?? .implicit
        }

        static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            pointer.map { String(cString: $0) }
        }
    }
}

extension YAMLComposer {
    /// `node` with its implicit tags resolved as Yams resolves a key's when it hashes it
    /// (with the basic resolver): scalars `str`, lists `seq`, mappings `map`, at every
    /// level of a list or mapping used as a key. Iterative: a key may be nested deeply.
    static func resolvedAsKey(_ node: Node) -> Node {
        if case .scalar(var scalar) = node {
            if scalar.tag == .implicit { scalar.tag = .str }
            return .scalar(scalar)
        }
        enum Step {
            case visit(Node)
            case build(Node, children: Int)
        }
        var steps: [Step] = [.visit(node)]
        var built: [Node] = []
        while let step = steps.popLast() {
            switch step {
            case .visit(.scalar(var scalar)):
                if scalar.tag == .implicit { scalar.tag = .str }
                built.append(.scalar(scalar))
            case .visit(let node):
                var children: [Node] = []
                if case .sequence(let sequence) = node { children = sequence.nodes }
                if case .mapping(let mapping) = node { children = mapping.pairs.flatMap { [$0.key, $0.value] } }
                steps.append(.build(node, children: children.count))
                steps += children.reversed().map(Step.visit)
            case .build(let node, let count):
                let children = Array(built.suffix(count))
                built.removeLast(count)
                switch node {
                case .sequence(let sequence):
                    let tag = sequence.tag == .implicit ? Tag.Name.seq : sequence.tag
                    built.append(.sequence(Node.Sequence(nodes: children, tag: tag, mark: sequence.mark)))
                case .mapping(let mapping):
                    let pairs = stride(from: 0, to: children.count, by: 2).map {
                        (key: children[$0], value: children[$0 + 1])
                    }
                    let tag = mapping.tag == .implicit ? Tag.Name.map : mapping.tag
                    built.append(.mapping(Node.Mapping(pairs: pairs, tag: tag, mark: mapping.mark)))
                case .scalar:
                    built.append(node)
                }
            }
        }
        return built[0]
    }
}
