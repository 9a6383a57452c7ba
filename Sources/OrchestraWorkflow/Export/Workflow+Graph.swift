import Foundation

extension Workflow {
    /// The formats of ``graph(format:)``.
    package enum GraphFormat: String, Sendable, CaseIterable {
        /// Graphviz: `dot -Tsvg`.
        case dot
        /// A Mermaid flowchart (GitHub renders it in Markdown).
        case mermaid
    }

    /// The steps and their dependencies as a diagram: each step labelled with its id, method
    /// and path (and `for each STEP.CAPTURE` for a fan-out); `needs` as solid arrows, dependencies that come from a template
    /// (`{{login.token}}`) as dashed arrows labelled with the capture.
    package func graph(format: GraphFormat) -> String {
        switch format {
        case .dot: dot()
        case .mermaid: mermaid()
        }
    }

    /// `POST /login`: the method and the URL without a leading base (`{{vars.base}}` or
    /// `scheme://host`).
    func shortRequest(_ step: WorkflowStep) -> String {
        var url = step.request.url.source
        if case .reference(let reference)? = step.request.url.segments.first, reference.isVariable {
            url = String(url.dropFirst(reference.sourceLength(in: url)))
        } else if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            url = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
        }
        return "\(step.request.method.rawValue) \(url.isEmpty ? "/" : url)" + (auth != nil && step.usesAuth ? " 🔒" : "")
    }

    /// The lines of a step's label: its id, `for each album.images` for a fan-out, its request.
    func labelLines(_ step: WorkflowStep) -> [String] {
        let fanOut = step.forEach.map { ["for each \($0.namespace).\($0.name)"] } ?? []
        return [step.id] + fanOut + [shortRequest(step)]
    }

    /// The edges: (from, to, capture names when the dependency comes from templates).
    private var edges: [(from: String, to: String, captures: [String])] {
        steps.flatMap { step in
            let explicit = step.needs.map { (from: $0, to: step.id, captures: [String]()) }
            let implicit = step.implicitNeeds.map { dependency in
                let names = step.captureReferences.filter { $0.namespace == dependency }.map(\.name)
                return (from: dependency, to: step.id, captures: uniqued(names))
            }
            return explicit + implicit
        }
    }

    private func dot() -> String {
        var lines = ["digraph \(dotQuoted(name ?? "workflow")) {", "  rankdir=LR;", "  node [shape=box, style=rounded, fontname=\"Helvetica\"];"]
        for step in steps {
            lines.append("  \(dotQuoted(step.id)) [label=\(dotQuoted(labelLines(step).joined(separator: "\n")))];")
        }
        for edge in edges {
            let attributes = edge.captures.isEmpty ? "" : " [style=dashed, label=\(dotQuoted(edge.captures.joined(separator: ", ")))]"
            lines.append("  \(dotQuoted(edge.from)) -> \(dotQuoted(edge.to))\(attributes);")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private func mermaid() -> String {
        var lines = ["flowchart LR"]
        let names = Dictionary(uniqueKeysWithValues: steps.enumerated().map { ($0.element.id, "s\($0.offset)") })
        for step in steps {
            lines.append("  \(names[step.id]!)[\"\(labelLines(step).map(mermaidEscaped).joined(separator: "<br/>"))\"]")
        }
        for edge in edges {
            guard let from = names[edge.from], let to = names[edge.to] else { continue }
            if edge.captures.isEmpty {
                lines.append("  \(from) --> \(to)")
            } else {
                lines.append("  \(from) -. \"\(mermaidEscaped(edge.captures.joined(separator: ", ")))\" .-> \(to)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func dotQuoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }

    private func mermaidEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "#quot;")
            .replacingOccurrences(of: "<", with: "#lt;").replacingOccurrences(of: ">", with: "#gt;")
    }
}

/// The elements of `names` without repeats, in first-seen order.
private func uniqued(_ names: [String]) -> [String] {
    var seen = Set<String>()
    return names.filter { seen.insert($0).inserted }
}

extension Template.Reference {
    /// How many characters the reference takes at the start of `source` (`{{ vars.base }}`).
    func sourceLength(in source: String) -> Int {
        guard let close = source.range(of: "}}") else { return 0 }
        return source.distance(from: source.startIndex, to: close.upperBound)
    }
}
