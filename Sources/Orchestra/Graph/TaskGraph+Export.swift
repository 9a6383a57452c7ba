extension TaskGraph {
    /// The graph's structure in Graphviz DOT: one node per task, an edge from each dependency
    /// to its dependent (the direction work flows), dashed for `afterOutcomesOf:`. Render with
    /// `dot -Tsvg`.
    public func dot() -> String {
        draw(on: DOTWriter(name: "TaskGraph"))
    }

    /// The graph's structure as a Mermaid flowchart (renders in GitHub Markdown). Ids become
    /// `n0`, `n1`, … with the real id as the label, so any id is safe. `afterOutcomesOf:`
    /// edges are dotted.
    public func mermaid() -> String {
        draw(on: MermaidWriter())
    }

    /// Every node, then every edge (dependency → dependent, dashed for `afterOutcomesOf:`),
    /// in the order the nodes were added.
    private func draw(on writer: some DiagramWriter) -> String {
        var writer = writer
        let nodes = self.nodes
        for position in 0..<nodes.count {
            writer.node(nodes.ids[position], label: [])
        }
        for position in 0..<nodes.count {
            for dependency in nodes.dependencyIDs(of: position) {
                let dashed = nodes.runsAfterAnyOutcome[position]
                writer.edge(from: dependency, to: nodes.ids[position], dashed: dashed, label: nil)
            }
        }
        return writer.render()
    }
}

extension GraphResult {
    /// The run as Chrome Trace Event JSON: one complete (`"X"`) event per node that ran, with
    /// `ts` and `dur` in microseconds from the run's start, one `tid` lane per concurrently
    /// running slot (bars never overlap in a lane), and the node's outcome and attempts in
    /// `args`. Open it in Perfetto (ui.perfetto.dev) or `chrome://tracing`.
    public func chromeTrace() -> String {
        var laneEnds: [Duration] = []
        var trace = ChromeTraceWriter()
        let ran = nodeIDs.compactMap { id -> (String, NodeOutcome<any Sendable>, Duration, Duration)? in
            guard let outcome = outcome(id: id), let start = outcome.started, let end = outcome.ended else {
                return nil
            }
            return (id, outcome, start, end)
        }.sorted { ($0.2, $0.3) < ($1.2, $1.3) }
        for (id, outcome, start, end) in ran {
            let lane: Int
            if let free = laneEnds.firstIndex(where: { $0 <= start }) {
                lane = free
                laneEnds[free] = end
            } else {
                lane = laneEnds.count
                laneEnds.append(end)
            }
            trace.job(
                id, category: "node", lane: lane + 1, start: start, end: end,
                args: [("outcome", .text(outcome.state.description)), ("attempts", .number(outcome.attempts))]
            )
        }
        return trace.render()
    }
}
