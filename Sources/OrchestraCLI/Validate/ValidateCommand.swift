import ArgumentParser
import OrchestraWorkflow

/// `orchestra validate FILE`: checks a workflow without sending anything.
struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a workflow file without running it.",
        discussion: """
            Reports every problem with its file, line, step and field: syntax, unknown fields, \
            wrong types, missing steps, captures or variables, cycles, bad URLs, limits below 1. \
            Exit status: 0 valid, 2 invalid (or a wrong command line).
            """
    )

    @OptionGroup var options: WorkflowFileOptions

    func run() async throws {
        let workflow = try options.load()
        let edges = workflow.steps.reduce(0) { $0 + $1.dependencies.count }
        var facts = [
            Format.count(workflow.steps.count, "step"), Format.count(edges, "dependency", plural: "dependencies"),
        ]
        let fanOuts = workflow.steps.count { $0.forEach != nil }
        if fanOuts > 0 { facts.append(Format.count(fanOuts, "for_each step")) }
        facts.append("limit \(workflow.limit)")
        if !workflow.hostLimits.isEmpty {
            facts.append("host limits " + workflow.hostLimits.map { "\($0.host)=\($0.limit)" }.joined(separator: ", "))
        }
        if workflow.auth != nil { facts.append("auth") }
        facts.append("failure: \(workflow.failurePolicy.rawValue)")
        Console.standardOutput(noColor: true).line("\(options.file): ok — \(facts.joined(separator: ", "))")
    }
}
