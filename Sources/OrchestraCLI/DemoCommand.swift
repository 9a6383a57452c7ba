import ArgumentParser
import Foundation
import OrchestraDemoServer

/// `orchestra demo`: the seed articles' scenarios, played with Orchestra on simulated downloads.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play the seed articles' scenarios with Orchestra, on 8 simulated image downloads.",
        discussion: """
            Each scenario names the hand-rolled pattern it replaces (dispatch_group, \
            dispatch_semaphore, NSConditionLock, async NSOperation, a token refresher), runs \
            it with Orchestra, and draws a timeline of what ran when.

            Scenarios:
            \(Scenario.catalog)
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Play only this scenario, by name or number: \(Scenario.all.map(\.name).joined(separator: ", ")).",
            valueName: "name"
        )
    )
    var scenario: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How many times faster than the nominal latencies (\(SimulatedImage.latencyRange.lowerBound)–\(SimulatedImage.latencyRange.upperBound) ms) to run; 1 is real time.",
            valueName: "factor"
        )
    )
    var speed: Double = 3

    @Flag(name: .long, help: "Only start the demo HTTP server on 127.0.0.1, print its address, and serve until stopped (Ctrl-C).")
    var serve = false

    @Option(name: .long, help: ArgumentHelp("With --serve: the port to listen on; 0 (the default) picks a free one.", valueName: "port"))
    var port: Int = 0

    @Flag(name: .long, help: "Turn colours off (as NO_COLOR does). When stdout is not a terminal, output is plain anyway: no colours, no redraws.")
    var noColor = false

    func validate() throws {
        if let scenario, Scenario.named(scenario) == nil {
            let names = Scenario.all.map(\.name).joined(separator: ", ")
            throw ValidationError("Unknown scenario '\(scenario)'. Choose one of: \(names) (or 1–\(Scenario.all.count)).")
        }
        guard (0...65_535).contains(port) else {
            throw ValidationError("--port must be 0…65535, got \(port).")
        }
        guard speed > 0, speed.isFinite else {
            throw ValidationError("--speed must be a number greater than 0, got '\(Format.factor(speed))'.")
        }
    }

    func run() async throws {
        if serve {
            let console = Console.standardOutput(noColor: noColor)
            try await DemoServer.run(configuration: .init(port: port)) { server in
                console.line("Orchestra demo server listening on \(server.baseURL.absoluteString) (Ctrl-C to stop)")
                console.line("Try: curl \(server.baseURL.absoluteString)/images/0 -o /dev/null -w '%{size_download} bytes\\n'")
            }
            return
        }
        let console = Console.standardOutput(noColor: noColor)
        let scenarios = scenario.flatMap(Scenario.named).map { [$0] } ?? Scenario.all
        let player = ScenarioPlayer(console: console, speed: speed)
        let clock = ContinuousClock()
        let start = clock.now

        console.line(intro(console, scenarios: scenarios.count))
        var results: [ScenarioPlayer.Result] = []
        for scenario in scenarios {
            let number = Scenario.all.firstIndex { $0.name == scenario.name }! + 1
            results.append(try await player.play(scenario, number: number, of: Scenario.all.count))
        }

        let total = Format.wallTime(clock.now - start)
        let broken = results.filter(\.exceededLimit)
        guard broken.isEmpty else {
            let names = broken.map { "\($0.name) (\($0.maxConcurrency) at once, limit \($0.limit))" }
            console.line("\n" + console.paint("Concurrency limit exceeded in: \(names.joined(separator: ", "))", .red))
            throw ExitCode.failure
        }
        let played = scenarios.count == 1 ? "1 scenario" : "all \(scenarios.count) scenarios"
        console.line("\n" + console.paint("Played \(played) in \(total); every limit held.", .green))
    }

    private func intro(_ console: Console, scenarios: Int) -> String {
        let range = SimulatedImage.latencyRange
        let scaled = "\(Int((Double(range.lowerBound) / speed).rounded()))–\(Int((Double(range.upperBound) / speed).rounded())) ms"
        let speedNote = speed == 1 ? "" : " (÷ speed \(Format.factor(speed)) → \(scaled))"
        return console.paint("Orchestra demo", .bold)
            + " · \(scenarios == 1 ? "1 scenario" : "\(scenarios) scenarios") from the seed articles"
            + " · 8 simulated image downloads of \(range.lowerBound)–\(range.upperBound) ms\(speedNote)"
    }
}
