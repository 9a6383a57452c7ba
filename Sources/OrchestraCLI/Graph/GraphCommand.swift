import ArgumentParser
import OrchestraWorkflow

extension Workflow.GraphFormat: ExpressibleByArgument {}

/// `orchestra graph FILE --format dot|mermaid`: the steps and their dependencies as a diagram.
struct GraphCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Print a workflow's steps and dependencies as a Mermaid or Graphviz diagram.",
        discussion: """
            Each step shows its id, method and path. 'needs' are solid arrows; dependencies that \
            come from a template such as {{login.token}} are dashed arrows labelled with the \
            capture. Render DOT with `dot -Tsvg`; paste Mermaid into Markdown. Exit status 2 if \
            the file or the command line is invalid.
            """
    )

    @OptionGroup var options: WorkflowFileOptions

    @Option(help: ArgumentHelp("mermaid or dot.", valueName: "format"))
    var format: Workflow.GraphFormat = .mermaid

    func run() async throws {
        let workflow = try options.load()
        Console.standardOutput(noColor: true).write(workflow.graph(format: format))
    }
}
