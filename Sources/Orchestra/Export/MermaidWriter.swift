/// Writes a Mermaid flowchart (GitHub renders it in Markdown): every diagram Orchestra draws
/// (a ``TaskGraph``'s structure, a workflow's steps) goes through it.
///
/// Ids become keys `n0`, `n1`, … in the order they are first named, with the real id as the
/// label, so any id is safe. An edge to an id never declared gets its own box, labelled with
/// the id.
package struct MermaidWriter: DiagramWriter, Sendable {
    private var lines = ["flowchart LR"]
    private var keys: [String: String] = [:]

    /// An empty left-to-right flowchart.
    package init() {}

    /// Declares a node; `label` lines are shown one under the other (the id when empty).
    package mutating func node(_ id: String, label: [String] = []) {
        _ = key(for: id, label: label)
    }

    /// An arrow from `from` to `to`: dotted for a looser dependency, with `label` on it when
    /// given.
    package mutating func edge(from: String, to: String, dashed: Bool = false, label: String? = nil) {
        let source = key(for: from)
        let target = key(for: to)
        let arrow =
            switch (dashed, label) {
            case (false, nil): "-->"
            case (true, nil): "-.->"
            case (false, let label?): "-- \"\(Self.escaped(label))\" -->"
            case (true, let label?): "-. \"\(Self.escaped(label))\" .->"
            }
        lines.append("  \(source) \(arrow) \(target)")
    }

    /// Draws `members` (nodes declared already) in a subgraph titled `label`.
    package mutating func group(_ label: String, members: [String]) {
        let number = lines.count { $0.hasPrefix("  subgraph ") }
        lines.append("  subgraph g\(number) [\"\(Self.escaped(label))\"]")
        for member in members { lines.append("    \(key(for: member))") }
        lines.append("  end")
    }

    /// The finished chart, ending with a newline.
    package func render() -> String {
        lines.joined(separator: "\n") + "\n"
    }

    /// The key of `id`, declaring its box the first time it is named.
    private mutating func key(for id: String, label: [String] = []) -> String {
        if let key = keys[id] { return key }
        let key = "n\(keys.count)"
        keys[id] = key
        let text = (label.isEmpty ? [id] : label).map(Self.escaped).joined(separator: "<br/>")
        lines.append("  \(key)[\"\(text)\"]")
        return key
    }

    /// `text` safe inside a quoted Mermaid label: quotes and angle brackets as entities,
    /// line breaks as spaces.
    private static func escaped(_ text: String) -> String {
        text.replacingAll("\"", with: "#quot;").replacingAll("<", with: "#lt;").replacingAll(">", with: "#gt;")
            .replacingAll("\n", with: " ")
    }
}
