import ArgumentParser

/// The `orchestra` command. `swift run orchestra demo` plays the seed articles' scenarios.
@main
struct OrchestraCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchestra",
        abstract: "Coordinate async work without DispatchGroup, blocking semaphores or NSConditionLock.",
        discussion: "Start with `orchestra demo`: it replays the classic hand-rolled patterns with Orchestra.",
        version: OrchestraVersion.current,
        subcommands: [DemoCommand.self, RunCommand.self, ValidateCommand.self, GraphCommand.self],
        defaultSubcommand: DemoCommand.self
    )
}
