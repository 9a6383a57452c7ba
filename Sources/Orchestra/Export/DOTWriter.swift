/// Writes a Graphviz DOT digraph: every diagram Orchestra draws (a ``TaskGraph``'s structure,
/// a workflow's steps) goes through it, so quoting and layout are decided once.
///
/// Nodes are boxes with rounded corners laid out left to right; an edge to an id never
/// declared still shows, as Graphviz draws it as a plain node.
package struct DOTWriter: DiagramWriter, Sendable {
    private var lines: [String]

    /// A digraph named `name` (quoted, so any text is allowed).
    package init(name: String) {
        lines = [
            "digraph \(Self.quoted(name)) {", "  rankdir=LR;",
            "  node [shape=box, style=rounded, fontname=\"Helvetica\"];",
        ]
    }

    /// Declares a node; `label` lines are shown one under the other, below nothing else
    /// (without a label Graphviz shows the id).
    package mutating func node(_ id: String, label: [String] = []) {
        let attributes = label.isEmpty ? "" : " [label=\(Self.quoted(label.joined(separator: "\n")))]"
        lines.append("  \(Self.quoted(id))\(attributes);")
    }

    /// An arrow from `from` to `to` (the direction work flows): dashed for a looser
    /// dependency, with `label` beside it when given.
    package mutating func edge(from: String, to: String, dashed: Bool = false, label: String? = nil) {
        var attributes: [String] = []
        if dashed { attributes.append("style=dashed") }
        if let label { attributes.append("label=\(Self.quoted(label))") }
        let list = attributes.isEmpty ? "" : " [\(attributes.joined(separator: ", "))]"
        lines.append("  \(Self.quoted(from)) -> \(Self.quoted(to))\(list);")
    }

    /// Draws `members` (nodes declared already) in a cluster labelled `label`.
    package mutating func group(_ label: String, members: [String]) {
        let number = lines.count { $0.hasPrefix("  subgraph ") }
        lines.append("  subgraph \(Self.quoted("cluster_\(number)")) {")
        lines.append("    label=\(Self.quoted(label)); style=dashed;")
        for member in members { lines.append("    \(Self.quoted(member));") }
        lines.append("  }")
    }

    /// The finished file, ending with a newline. Render with `dot -Tsvg`.
    package func render() -> String {
        (lines + ["}"]).joined(separator: "\n") + "\n"
    }

    /// `text` as a DOT string: backslashes and quotes escaped, line breaks as `\n`.
    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"").replacingAll("\n", with: "\\n")
            + "\""
    }
}
