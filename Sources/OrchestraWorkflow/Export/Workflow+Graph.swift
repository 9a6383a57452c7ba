import Foundation
import Orchestra

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
        case .dot: draw(on: DOTWriter(name: name ?? "workflow"))
        case .mermaid: draw(on: MermaidWriter())
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
        let fanOut = (step.forEach.map { ["for each \($0.namespace).\($0.name)"] } ?? []) + Self.conditionLines(step)
        return [step.id] + fanOut + [shortRequest(step)] + (step.paginate.map { [Self.pagesLine($0)] } ?? [])
    }

    /// `pages by $.links.next → items $.data (≤ 1000)`: how a `paginate:` step finds its pages.
    static func pagesLine(_ pagination: Pagination) -> String {
        let by =
            switch pagination.next {
            case .url(.header(let name)) where name.canonicalName == "link": "pages by Link rel=next"
            case .url(let source): "pages by \(source)"
            case .cursor(let source): "pages by cursor \(source)"
            case .number: "pages by {{page.number}}"
            }
        let items = pagination.items.map { " → items \($0)" } ?? ""
        return "\(by)\(items) (≤ \(pagination.maxPages))"
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

    /// Every step with its label, then every edge: `needs` solid, template dependencies dashed
    /// and labelled with their captures.
    private func draw(on writer: some DiagramWriter) -> String {
        var writer = writer
        for step in steps {
            writer.node(step.id, label: labelLines(step))
        }
        drawIncludedFiles(on: &writer)
        for edge in edges {
            let captures = edge.captures.isEmpty ? nil : edge.captures.joined(separator: ", ")
            writer.edge(from: edge.from, to: edge.to, dashed: captures != nil, label: captures)
        }
        return writer.render()
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
