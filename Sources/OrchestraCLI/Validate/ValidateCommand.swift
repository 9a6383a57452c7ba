import ArgumentParser
import OrchestraHTTP
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
        if let rate = workflow.rate { facts.append("rate \(HTTPRateEvent.text(rate))") }
        let limited = workflow.hostLimits.compactMap { entry in entry.limit.map { "\(entry.host)=\($0)" } }
        if !limited.isEmpty { facts.append("host limits " + limited.joined(separator: ", ")) }
        let paced = workflow.hostLimits.compactMap { entry in
            entry.rate.map { "\(entry.host)=\(HTTPRateEvent.text($0))" }
        }
        if !paced.isEmpty { facts.append("host rates " + paced.joined(separator: ", ")) }
        if workflow.auth != nil { facts.append("auth") }
        facts.append("failure: \(workflow.failurePolicy.rawValue)")
        Console.standardOutput(noColor: true).line("\(options.file): ok — \(facts.joined(separator: ", "))")
    }
}
