extension TaskGraph {
    /// The graph's structure in Graphviz DOT: one node per task, an edge from each dependency
    /// to its dependent (the direction work flows). Render with `dot -Tsvg`.
    public func dot() -> String {
        let nodes = structure()
        var lines = ["digraph TaskGraph {", "  rankdir=LR;", "  node [shape=box, style=rounded];"]
        for node in nodes {
            lines.append("  \(dotQuoted(node.id));")
        }
        for node in nodes {
            for dependency in node.dependencies {
                lines.append("  \(dotQuoted(dependency)) -> \(dotQuoted(node.id))\(node.afterOutcomes ? " [style=dashed]" : "");")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The graph's structure as a Mermaid flowchart (renders in GitHub Markdown). Ids become
    /// `n0`, `n1`, … with the real id as the label, so any id is safe. `afterOutcomesOf:`
    /// edges are dotted.
    public func mermaid() -> String {
        let nodes = structure()
        var key: [String: String] = [:]
        var lines = ["flowchart LR"]
        for (position, node) in nodes.enumerated() {
            key[node.id] = "n\(position)"
            lines.append("  n\(position)[\"\(mermaidEscaped(node.id))\"]")
        }
        for node in nodes {
            for dependency in node.dependencies {
                // A dependency on an unknown id still shows, as its own box.
                let from = key[dependency] ?? "missing_\(mermaidSafe(dependency))"
                lines.append("  \(from) \(node.afterOutcomes ? "-.->" : "-->") \(key[node.id]!)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func structure() -> [(id: String, dependencies: [String], afterOutcomes: Bool)] {
        let nodes = self.nodes
        return (0..<nodes.count).map { (nodes.ids[$0], nodes.dependencyIDs(of: $0), nodes.runsAfterAnyOutcome[$0]) }
    }
}

extension GraphResult {
    /// The run as Chrome Trace Event JSON: one complete (`"X"`) event per node that ran, with
    /// `ts` and `dur` in microseconds from the run's start, one `tid` lane per concurrently
    /// running slot (bars never overlap in a lane), and the node's outcome and attempts in
    /// `args`. Open it in Perfetto (ui.perfetto.dev) or `chrome://tracing`.
    public func chromeTrace() -> String {
        var laneEnds: [Duration] = []
        var events: [String] = []
        let ran = nodeIDs.compactMap { id -> (String, NodeOutcome<any Sendable>, Duration, Duration)? in
            guard let outcome = outcome(id: id), let start = outcome.started, let end = outcome.ended else { return nil }
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
            events.append(
                "{\"name\":\(jsonQuoted(id)),\"cat\":\"node\",\"ph\":\"X\",\"pid\":1,\"tid\":\(lane + 1)," +
                "\"ts\":\(jsonMicroseconds(start)),\"dur\":\(jsonMicroseconds(end - start))," +
                "\"args\":{\"outcome\":\(jsonQuoted(outcome.state.description)),\"attempts\":\(outcome.attempts)}}"
            )
        }
        return "{\"traceEvents\":[\n" + events.joined(separator: ",\n") + "\n],\"displayTimeUnit\":\"ms\"}\n"
    }
}

/// `duration` in microseconds, as a JSON number with up to six decimals.
package func jsonMicroseconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    let remainder = (attoseconds / 1_000_000) % 1_000_000   // picoseconds → fraction of a µs
    return remainder == 0 ? "\(micros)" : "\(micros).\(String(remainder + 1_000_000).dropFirst())"
}

/// `text` as a JSON string literal, quotes included (shared with the command's trace files).
package func jsonQuoted(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}

private func dotQuoted(_ text: String) -> String {
    "\"" + text.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"").replacingAll("\n", with: "\\n") + "\""
}

private func mermaidEscaped(_ text: String) -> String {
    text.replacingAll("\"", with: "#quot;").replacingAll("\n", with: " ")
}

private func mermaidSafe(_ text: String) -> String {
    String(text.unicodeScalars.map { ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? Character($0) : "_" })
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
