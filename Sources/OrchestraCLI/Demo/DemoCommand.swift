import ArgumentParser
import Foundation
import Orchestra
import OrchestraDemoServer
import OrchestraHTTP

/// `orchestra demo`: everyday coordination patterns (batches, limits, chains, a dependency
/// graph, token refresh, failures), played with Orchestra against a real HTTP
/// server started on 127.0.0.1.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play everyday async coordination patterns with Orchestra against a local HTTP server.",
        discussion: """
            Starts the demo server on 127.0.0.1 (a free port; no network needed) and plays each \
            scenario against it: the hand-rolled pattern it replaces (dispatch_group, \
            dispatch_semaphore, NSConditionLock, async NSOperation + addDependency, a token \
            refresher), a live progress bar, a timeline of what ran when, and the facts the \
            server measured (how many requests it saw at once, refresh calls). The command fails \
            if a fact does not hold.

            Scenarios:
            \(Scenario.catalog)
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Play only these scenarios, by name or number (comma-separated): \(Scenario.all.map(\.name).joined(separator: ", ")).",
            valueName: "names"
        )
    )
    var scenario: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Scenarios 1–4 download these URLs instead of the demo server's eight images (repeat the option; at least 2).",
            valueName: "url"
        )
    )
    var url: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write each scenario's Chrome Trace Event JSON and an HTML timeline into this folder.", valueName: "dir"))
    var trace: String?

    // `.unconditional`: `--speed -1` reads -1 as the value (and is refused naming the range),
    // not as an option, which left --speed without a value.
    @Option(
        name: .long,
        parsing: .unconditional,
        help: ArgumentHelp(
            "Ask the server for latencies this many times shorter than the images' nominal ones (60–1400 ms); 1 is real time, 0.01 to 1000.",
            valueName: "factor")
    )
    var speed: Double = 1

    @Flag(
        name: .long,
        help: "Only start the demo HTTP server on 127.0.0.1, print its address, and serve until stopped (Ctrl-C).")
    var serve = false

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("With --serve: the port to listen on; 0 (the default) picks a free one.", valueName: "port"))
    var port: Int = 0

    @Flag(
        name: .long,
        help:
            "Turn colours off (as NO_COLOR does). When stdout is not a terminal, output is plain anyway: no colours, no redraws."
    )
    var noColor = false

    @OptionGroup var transportOptions: TransportOptions

    func run() async throws {
        let console = Console.standardOutput(noColor: noColor)
        var errors = DemoArguments.problems(scenario: scenario, urls: url, speed: speed, port: port)
        if let trace, !serve,
            let problem = TraceExport.prepareDirectory(trace)
                ?? TraceExport.problem(
                    writing: DemoArguments.scenarios(scenario).map {
                        ScenarioPlayer.traceBaseName(of: $0, number: DemoArguments.number(of: $0))
                    }, into: trace
                )
        {
            errors.append("--trace: \(problem)")
        }
        if port != 0, !serve {
            errors.append("--port: only with --serve (the scenarios start their server on a free port)")
        }
        guard errors.isEmpty else {
            for error in errors { Console.standardError.line("orchestra demo: error: \(error)") }
            throw ExitCode(2)
        }
        // Ctrl-C or SIGTERM stops the server or the scenarios (exit 130 / 143); a second one
        // exits at once.
        let signals = TerminationSignals.install(
            command: "orchestra demo", acknowledging: serve ? "stopping the server" : "cancelling the demo"
        )
        if serve {
            let listening = Locked(false)
            let port = port
            do {
                try await signals.cancellingOnSignal {
                    // A server in a process of its own: its handlers on the shared pool.
                    try await DemoServer.run(configuration: .init(port: port, threads: 0)) { server in
                        listening.withLock { $0 = true }
                        console.line(
                            "Orchestra demo server listening on \(server.baseURL.absoluteString) (Ctrl-C to stop)")
                        console.line("Try: curl \(server.baseURL.absoluteString)/album")
                        console.line(
                            "     orchestra run Examples/album.yaml --var base=\(server.baseURL.absoluteString)")
                    }
                }
            } catch  where signals.received != nil {
                // Stopping the server may report the cancellation as an error: the signal says why.
            } catch  where !listening.withLock({ $0 }) {
                // The server could not start: almost always a port that is taken.
                let reason =
                    "\(error)".contains("Address already in use") ? "the port is already in use" : Format.error(error)
                Console.standardError.line(
                    "orchestra demo: error: --port: cannot listen on 127.0.0.1:\(port): \(reason)")
                throw ExitCode(2)
            }
            try Self.exitIfSignalled(signals, console: console, what: "the server stopped")
            return
        }
        let scenarios = DemoArguments.scenarios(scenario)
        let urls = url.compactMap(URL.init(string:))
        let traceDirectory = trace.map { URL(fileURLWithPath: $0, isDirectory: true) }
        let speed = speed
        let results: [ScenarioPlayer.Result]
        do {
            results = try await transportOptions.withTransport(command: "orchestra demo") { transport in
                try await signals.cancellingOnSignal {
                    try await withDemoServer { server in
                        let player = ScenarioPlayer(
                            console: console, server: server, transport: transport, speed: speed, customURLs: urls,
                            traceDirectory: traceDirectory
                        )
                        console.line(
                            console.paint("Orchestra demo", .bold)
                                + " · \(Format.count(scenarios.count, "scenario")) · demo server on \(server.baseURL.absoluteString)"
                                + (speed == 1 ? "" : " · latencies ÷ \(Format.factor(speed))")
                        )
                        var results: [ScenarioPlayer.Result] = []
                        for scenario in scenarios {
                            try Task.checkCancellation()  // a signal stops the demo between scenarios too
                            results.append(
                                try await player.play(
                                    scenario, number: DemoArguments.number(of: scenario), of: Scenario.all.count))
                        }
                        return results
                    }
                }
            }
        } catch  where signals.received != nil {
            results = []  // cancelled: reported below
        }
        try Self.exitIfSignalled(signals, console: console, what: "the demo was cancelled")

        let total = results.reduce(Duration.zero) { $0 + $1.wallTime }
        let broken = results.flatMap { result in result.broken.map { "\(result.name): \($0.name) = \($0.value)" } }
        guard broken.isEmpty else {
            console.line("\n" + console.paint("Facts that did not hold:\n  " + broken.joined(separator: "\n  "), .red))
            throw ExitCode.failure
        }
        let played = scenarios.count == 1 ? "1 scenario" : "all \(scenarios.count) scenarios"
        let checked = results.reduce(0) { $0 + $1.facts.count { $0.holds == true } }
        console.line(
            "\n"
                + console.paint(
                    "Played \(played) in \(Format.wallTime(total)); all \(checked) checked facts held.", .green))
    }
}

extension DemoCommand {
    /// After a signal: says so (on a terminal, on a line of its own: the progress bar may have
    /// been redrawn after the signal was acknowledged) and exits with the signal's status, 130
    /// or 143.
    static func exitIfSignalled(_ signals: TerminationSignals, console: Console, what: String) throws {
        guard let signal = signals.received else { return }
        if console.isTerminal { console.write(Console.clearLine) }
        Console.standardError.line("orchestra demo: \(signal.name): \(what)")
        throw ExitCode(signal.exitStatus)
    }
}
