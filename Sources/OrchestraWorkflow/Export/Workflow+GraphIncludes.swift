import Orchestra

extension Workflow {
    /// The steps of each file the workflow includes (`include:`), in a box named by the file
    /// (and its prefix: `shared/greet.yaml as ada_`): a DOT cluster, a Mermaid subgraph. The
    /// including file's own steps stay outside.
    func drawIncludedFiles(on writer: inout some DiagramWriter) {
        for file in includedFiles where !file.steps.isEmpty {
            writer.group(file.name, members: file.steps)
        }
    }
}
