/// What a diagram format writes: nodes with labels and arrows between them. ``DOTWriter`` and
/// ``MermaidWriter`` conform, so each drawing (a task graph, a workflow) is described once and
/// rendered in either format.
package protocol DiagramWriter {
    /// Declares a node; `label` lines are shown one under the other (the id when empty).
    mutating func node(_ id: String, label: [String])

    /// An arrow from `from` to `to` (the direction work flows): dashed for a looser
    /// dependency, with `label` beside it when given.
    mutating func edge(from: String, to: String, dashed: Bool, label: String?)

    /// Draws the nodes `members` (declared already) inside a box labelled `label`: a DOT
    /// cluster, a Mermaid subgraph. Nothing by default.
    mutating func group(_ label: String, members: [String])

    /// The finished text, ending with a newline.
    func render() -> String
}

extension DiagramWriter {
    package mutating func group(_ label: String, members: [String]) {}
}
