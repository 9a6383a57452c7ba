import ArgumentParser
import Foundation
import OrchestraWorkflow

/// The file and `--var` options shared by `run`, `validate` and `graph`, and loading the file
/// with every problem printed to standard error (exit status 2: bad input, nothing sent).
struct WorkflowFileOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("The workflow file, YAML or JSON; - reads standard input.", valueName: "file"))
    var file: String

    @Option(
        name: .customLong("var"),
        help: ArgumentHelp(
            "Set a variable, overriding the file's 'vars:' (repeatable): --var base=http://127.0.0.1:8080",
            valueName: "name=value")
    )
    var variables: [String] = []

    /// Every `--var` of the command line, joined by NUL: see ``batchingVariables(_:)``.
    @Option(name: .customLong(Self.variableListName), help: .hidden)
    var variableList: String?

    @Option(
        name: .customLong("vars-file"),
        help: ArgumentHelp(
            "Read variables from a YAML or JSON file of name: value, or .env lines (repeatable; later files win, --var wins over files).",
            valueName: "file")
    )
    var variableFiles: [String] = []

    @Option(
        help: ArgumentHelp(
            "Run the workflow once per row of this file: .csv (a header row of column names) or .json (a list of objects); {{data.COLUMN}} is the row's value.",
            valueName: "file"))
    var data: String?

    /// The workflow, checked against the columns of `--data` if given; or every problem on
    /// standard error and `ExitCode(2)`.
    func load() throws -> Workflow {
        try loadWithRows().workflow
    }

    /// The workflow and the rows of `--data` (`nil` without the option), every row with
    /// every column the workflow uses.
    func loadWithRows() throws -> (workflow: Workflow, rows: DataRows?) {
        let rows = try loadRows()
        let workflow = try load(dataColumns: rows?.columns)
        if let rows { try check(rows, for: workflow) }
        return (workflow, rows)
    }

    /// Refuses rows without a column the workflow uses (a JSON row may lack a key), and a file
    /// with no rows at all.
    private func check(_ rows: DataRows, for workflow: Workflow) throws {
        var problems: [String] = []
        if rows.rows.isEmpty { problems.append("it has no rows, only the column names") }
        for (index, row) in rows.rows.enumerated() {
            for column in workflow.usedDataColumns.sorted() where row[column] == nil {
                problems.append(
                    "row \(index + 1) has no '\(TerminalText.quoted(column))' ({{data.\(TerminalText.quoted(column))}} uses it)"
                )
            }
        }
        guard problems.isEmpty else {
            let file = TerminalText.quoted(data ?? "")
            Console.standardError.line(
                problems.prefix(20).map { "--data: \(file): error: \($0)" }.joined(separator: "\n"))
            if problems.count > 20 { Console.standardError.line("--data: \(file): … and \(problems.count - 20) more") }
            throw ExitCode(2)
        }
    }

    /// The rows of `--data`; `nil` without the option.
    ///
    /// - Throws: `ExitCode(2)` after naming the file, the line and the problem.
    private func loadRows() throws -> DataRows? {
        guard let data else { return nil }
        do throws(WorkflowErrors) {
            return try Workflow.loadRows(contentsOf: URL(fileURLWithPath: data), name: data)
        } catch {
            Console.standardError.line(
                error.errors.map { "--data: " + TerminalText.safe($0.description) }.joined(separator: "\n"))
            throw ExitCode(2)
        }
    }

    /// The workflow, checked; or every problem on standard error and `ExitCode(2)`.
    ///
    /// - Parameter dataColumns: The columns of the `--data` file, if the run has one.
    private func load(dataColumns: [String]?) throws -> Workflow {
        var overrides: [String: String] = [:]
        var problems: [String] = []
        // Only --var names are checked for use: a vars file may hold other workflows' too.
        var commandLineNames: Set<String> = []
        for path in variableFiles {
            do throws(WorkflowErrors) {
                let variables = try Workflow.loadVariables(contentsOf: URL(fileURLWithPath: path), name: path)
                overrides.merge(variables) { _, later in later }
            } catch {
                problems += error.errors.map { "--vars-file: " + TerminalText.safe($0.description) }
            }
        }
        let assignments =
            variables
            + (variableList.map {
                $0.split(separator: Self.variableListSeparator, omittingEmptySubsequences: false).map(String.init)
            } ?? [])
        for assignment in assignments {
            let parts = assignment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else {
                problems.append(
                    "error: --var '\(TerminalText.quoted(assignment))' must be NAME=VALUE, as in --var base=http://127.0.0.1:8080"
                )
                continue
            }
            overrides[String(parts[0])] = String(parts[1])
            commandLineNames.insert(String(parts[0]))
        }
        guard problems.isEmpty else {
            Console.standardError.line(problems.joined(separator: "\n"))
            throw ExitCode(2)
        }
        do throws(WorkflowErrors) {
            guard !file.isEmpty else {
                throw WorkflowErrors([
                    WorkflowError(.unreadable, "no file given: name a workflow file, or - for standard input")
                ])
            }
            // `-` is standard input, read like any stream (a pipe, `<(…)`, a FIFO).
            let path = file == "-" ? "/dev/stdin" : file
            let workflow = try Workflow.load(
                contentsOf: URL(fileURLWithPath: path), name: file == "-" ? "<stdin>" : file, variables: overrides,
                dataColumns: dataColumns)
            // A --var no template uses changes nothing: most likely a misspelt name. The first
            // 20 are named, with the closest used name (each a pass over the used names).
            let unused = commandLineNames.sorted().filter { !workflow.usedVariables.contains($0) }
            for name in unused.prefix(Self.unusedVariablesNamed) {
                let closest =
                    workflow.usedVariable(closestTo: name).map { " (did you mean '\(TerminalText.quoted($0))'?)" } ?? ""
                let shown = TerminalText.quoted(name)
                Console.standardError.line(
                    "\(TerminalText.quoted(file)): warning: --var \(shown): no template uses {{vars.\(shown)}}\(closest)"
                )
            }
            if unused.count > Self.unusedVariablesNamed {
                Console.standardError.line(
                    "\(TerminalText.quoted(file)): warning: … and \(unused.count - Self.unusedVariablesNamed) more --var that no template uses"
                )
            }
            return workflow
        } catch {
            let count = error.errors.count
            // Each message may quote the file: one line per error, each made safe to print.
            Console.standardError.line(error.errors.map { TerminalText.safe($0.description) }.joined(separator: "\n"))
            Console.standardError.line(
                "\(file.isEmpty ? "orchestra" : TerminalText.quoted(file)): \(Format.count(count, "error")); nothing was sent"
            )
            throw ExitCode(2)
        }
    }
}

extension WorkflowFileOptions {
    /// The hidden option that carries every `--var` at once.
    static let variableListName = "var-list"
    /// What separates the values in it: NUL, which no command-line argument holds.
    static let variableListSeparator: Character = "\u{0}"
    /// How many unused `--var` names the warnings list one by one.
    static let unusedVariablesNamed = 20
    /// The subcommands whose options include these.
    static let subcommands: Set<String> = ["run", "validate", "graph"]

    /// `arguments` with every `--var NAME=VALUE` (and `--var=NAME=VALUE`) of `run`, `validate`
    /// or `graph` moved, in order, into one hidden `--var-list` argument.
    ///
    /// Why: ArgumentParser removes each parsed value from its list of arguments one at a time,
    /// so `n` arguments cost O(n²): 10,000 `--var` took 12–16 s. One argument costs what one
    /// `--var` costs, and the values are split in ``load()`` in linear time. A `--var` whose
    /// value is missing or starts with `-`, and anything after `--`, is left to ArgumentParser
    /// (and its messages).
    ///
    /// Complexity: O(*n*) in the number of arguments.
    static func batchingVariables(_ arguments: [String]) -> [String] {
        guard let subcommand = arguments.first, subcommands.contains(subcommand) else { return arguments }
        var kept: [String] = []
        var values: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                kept += arguments[index...]
                break
            }
            if argument == "--var", index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") {
                values.append(arguments[index + 1])
                index += 2
                continue
            }
            if argument.hasPrefix("--var=") {
                values.append(String(argument.dropFirst("--var=".count)))
            } else {
                kept.append(argument)
            }
            index += 1
        }
        guard !values.isEmpty else { return arguments }
        // Before a `--`, if there is one: after it, an option is an argument.
        let end = kept.firstIndex(of: "--") ?? kept.endIndex
        kept.insert(
            contentsOf: ["--\(variableListName)", values.joined(separator: String(variableListSeparator))], at: end)
        return kept
    }
}
