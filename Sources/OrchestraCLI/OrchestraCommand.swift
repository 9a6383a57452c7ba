import ArgumentParser
import Foundation
import OrchestraWorkflow

/// The `orchestra` command. `swift run orchestra demo` plays the coordination scenarios.
@main
struct OrchestraCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchestra",
        abstract: "Coordinate async work without DispatchGroup, blocking semaphores or NSConditionLock.",
        discussion: "Start with `orchestra demo`: it replays the classic hand-rolled patterns with Orchestra.",
        version: OrchestraVersion.current,
        subcommands: [
            DemoCommand.self, RunCommand.self, StatusCommand.self, WorkerCommand.self, ValidateCommand.self,
            GraphCommand.self,
        ],
        defaultSubcommand: DemoCommand.self
    )

    /// Exit status of a usage error (an unknown option, a missing argument, a value the option
    /// does not take), as for a workflow file with errors: bad input, nothing was done.
    static let usageErrorStatus: Int32 = 2

    /// Parses the arguments and runs the command, as ArgumentParser's `main()` does, except for
    /// how it ends:
    ///
    /// - A usage error exits 2 (the documented status for bad input), not ArgumentParser's 64
    ///   (`EX_USAGE`); `--help` and `--version` still exit 0.
    /// - An error the command did not report itself is printed as one readable line,
    ///   `orchestra run: error: …` (never Foundation's `Error Domain=…` dump), and exits 1.
    static func main() async {
        // Every --var in one argument: ArgumentParser's cost is quadratic in the arguments.
        let arguments = WorkflowFileOptions.batchingVariables(Array(CommandLine.arguments.dropFirst()))
        var command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot(arguments)
        } catch {
            exit(parsingFailedWith: error, arguments: arguments)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            // What `validate`, `graph`, `status`… printed may not have been written (a full
            // disk, `>/dev/full`): that is a failure, not a silent exit 0. (`run` reports its
            // own, with its reports and files, and exits through ExitCode.)
            let failures = Console.writeFailures()
            if !failures.isEmpty {
                let name = command is OrchestraCommand ? nil : type(of: command).configuration.commandName
                for failure in failures {
                    Console.standardError.line(
                        "\(["orchestra", name].compactMap { $0 }.joined(separator: " ")): error: \(failure)")
                }
                Foundation.exit(EXIT_FAILURE)
            }
        } catch let error as ExitCode {
            exit(withError: error)
        } catch let error as CleanExit {
            exit(withError: error)
        } catch  where error is ValidationError || !isOurs(command) {
            // ArgumentParser's own commands (`help`) end as ArgumentParser says.
            exit(parsingFailedWith: error, arguments: arguments)
        } catch {
            let subcommand = command is OrchestraCommand ? nil : type(of: command).configuration.commandName
            Console.standardError.line(
                "\(["orchestra", subcommand].compactMap { $0 }.joined(separator: " ")): error: \(Format.error(error))")
            Foundation.exit(EXIT_FAILURE)
        }
    }

    /// Ends the program after parsing failed: help and the version exit 0, a usage error 2 with
    /// ArgumentParser's message, in which an argument longer than ``MessageValue/limit``
    /// characters is shortened (it quotes arguments whole).
    private static func exit(parsingFailedWith error: any Error, arguments: [String]) -> Never {
        guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
        var message = fullMessage(for: error)
        for value in longValues(in: arguments) where message.contains(value) {
            message = message.replacingOccurrences(of: value, with: MessageValue.shortened(value))
        }
        // Line by line: the message's own line breaks stay; an argument's control characters do not.
        Console.standardError.line(
            message.split(separator: "\n", omittingEmptySubsequences: false).map { TerminalText.safe(String($0)) }
                .joined(separator: "\n"))
        Foundation.exit(usageErrorStatus)
    }

    /// Whether `command` is `orchestra` or one of its subcommands, not one ArgumentParser adds.
    private static func isOurs(_ command: any ParsableCommand) -> Bool {
        let commandType = ObjectIdentifier(type(of: command))
        return commandType == ObjectIdentifier(Self.self)
            || configuration.subcommands.contains { ObjectIdentifier($0) == commandType }
    }

    /// The arguments (and the values of `--option=value` arguments) longer than
    /// ``MessageValue/limit`` characters, longest first.
    private static func longValues(in arguments: [String]) -> [String] {
        var values: [String] = []
        for argument in arguments {
            values.append(argument)
            if let equals = argument.firstIndex(of: "=") {
                values.append(String(argument[argument.index(after: equals)...]))
            }
        }
        return values.filter { $0.utf8.count > MessageValue.limit }.sorted { $0.utf8.count > $1.utf8.count }
    }
}
