// libyaml's event parser, the one Yams is built on (Yams' own event API is private).
import CYaml

/// One pass over a YAML text's parse events that finds what Yams' composer cannot report well:
///
/// - **Aliases that expand too far.** `*name` repeats the whole node anchored as `&name`, so ten
///   levels of ten aliases each stand for 10¹⁰ values in a file under 1 KB. Yams shares the
///   repeated nodes, but every reader of the tree walks them all. The scan knows each anchored
///   node's expanded size when the node ends and stops at the first alias that takes the
///   values repeated by aliases past ``aliasBudget``, naming its line.
/// - **Every key given twice.** Yams throws at the first mapping that has one and names only
///   the first key's line; the scan reports each later occurrence at its own line, with the
///   line of the first.
///
/// It runs only when needed (a `*` in the text, or Yams refused a duplicate key), so a file
/// without aliases is parsed once.
///
/// Iterative: nesting is bounded by libyaml, not by the native stack.
struct YAMLEventScan {
    /// At most this many values may be repeated by aliases, over the whole file.
    static let aliasBudget = 1_000_000

    struct Problem: Equatable {
        var message: String
        var line: Int
        var column: Int
    }

    /// The problems found, in file order; the scan stops after an alias bomb.
    private(set) var problems: [Problem] = []
    /// Whether libyaml refused the text (Yams reports that error).
    private(set) var syntaxError = false

    /// A list or mapping being read.
    private struct Open {
        var isMapping: Bool
        var anchor: String?
        /// Values in its expansion so far, itself included.
        var size = 1
        /// A mapping's keys so far (plain text of scalar keys) with their lines.
        var keys: [String: Int] = [:]
        /// Whether the next node of a mapping is a key.
        var expectsKey = true
    }

    init(_ text: String) {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            syntaxError = true
            return
        }
        defer { yaml_parser_delete(&parser) }
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            scan(&parser)
        }
    }

    private mutating func scan(_ parser: inout yaml_parser_t) {
        var sizes: [String: Int] = [:]
        var stack: [Open] = []
        var repeated = 0
        while true {
            var event = yaml_event_t()
            guard yaml_parser_parse(&parser, &event) == 1 else {
                syntaxError = true
                return
            }
            defer { yaml_event_delete(&event) }
            let line = Int(event.start_mark.line) + 1
            let column = Int(event.start_mark.column) + 1
            /// A node that ended, with its expanded size: counted in its parent, and a key
            /// checked against the mapping's others.
            var ended: (size: Int, anchor: String?, key: String?)?
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let value = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                ended = (1, Self.string(scalar.anchor), value)
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                let size = sizes[name] ?? 1
                repeated += size
                guard repeated <= Self.aliasBudget else {
                    problems.append(Problem(
                        message: "aliases would repeat more than \(Self.aliasBudget) values (this *\(NodeReader.quoted(name)) repeats \(size)); an alias bomb is refused: anchor smaller values or write them out",
                        line: line, column: column
                    ))
                    return
                }
                ended = (size, nil, nil)
            case YAML_SEQUENCE_START_EVENT:
                stack.append(Open(isMapping: false, anchor: Self.string(event.data.sequence_start.anchor)))
            case YAML_MAPPING_START_EVENT:
                stack.append(Open(isMapping: true, anchor: Self.string(event.data.mapping_start.anchor)))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                guard let open = stack.popLast() else { continue }
                ended = (open.size, open.anchor, nil)
            default:
                continue
            }
            guard let node = ended else { continue }
            if let anchor = node.anchor { sizes[anchor] = node.size }
            guard let top = stack.indices.last else { continue }
            stack[top].size = min(stack[top].size + node.size, Int.max / 2)
            guard stack[top].isMapping else { continue }
            defer { stack[top].expectsKey.toggle() }
            guard stack[top].expectsKey, let key = node.key else { continue }
            if let first = stack[top].keys[key] {
                problems.append(Problem(
                    message: "the key '\(NodeReader.quoted(key))' is given twice in one mapping (first at line \(first)); remove one",
                    line: line, column: column
                ))
            } else {
                stack[top].keys[key] = line
            }
        }
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let pointer else { return nil }
        return String(cString: pointer)
    }
}
