import Foundation

/// Checks of `orchestra demo`'s options, each naming the option and the value.
enum DemoArguments {
    static func problems(scenario: String?, urls: [String], speed: Double, port: Int) -> [String] {
        var problems: [String] = []
        if let scenario {
            if names(scenario).isEmpty {
                problems.append(
                    "--scenario: give at least one scenario name or number: \(Scenario.all.map(\.name).joined(separator: ", "))"
                )
            }
            for name in names(scenario) where Scenario.named(name) == nil {
                problems.append(
                    "--scenario: unknown scenario '\(TerminalText.quoted(name))'; choose from \(Scenario.all.map(\.name).joined(separator: ", ")) (or 1–\(Scenario.all.count))"
                )
            }
        }
        for url in urls {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                parsed.host?.isEmpty == false
            else {
                problems.append("--url: '\(TerminalText.quoted(url))' is not an http(s) URL with a host")
                continue
            }
        }
        if urls.count == 1 { problems.append("--url: give at least 2 URLs (repeat the option), got 1") }
        if !DemoArguments.speeds.contains(speed) {
            problems.append("--speed: must be a number from 0.01 to 1000, got '\(Format.factor(speed))'")
        }
        if !(0...65_535).contains(port) { problems.append("--port: must be 0…65535, got \(port)") }
        return problems
    }

    /// The factors `--speed` accepts: latencies from 100 times longer to 1,000 times shorter
    /// (a scenario's latencies are 60–1400 ms; a factor far outside overflows them).
    static let speeds: ClosedRange<Double> = 0.01...1_000

    /// A scenario's number in the demo, from 1.
    static func number(of scenario: Scenario) -> Int {
        (Scenario.all.firstIndex { $0.name == scenario.name } ?? 0) + 1
    }

    static func names(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The scenarios named in `--scenario`, in the demo's order; all of them without it.
    static func scenarios(_ list: String?) -> [Scenario] {
        guard let list else { return Scenario.all }
        let chosen = Set(names(list).compactMap(Scenario.named).map(\.name))
        return Scenario.all.filter { chosen.contains($0.name) }
    }
}
