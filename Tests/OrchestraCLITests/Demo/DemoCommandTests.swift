import Foundation
import OrchestraDemoServer
import TestSupport
import Testing

/// `orchestra demo`, run as a user runs it: the built executable, its output on a pipe.
@Suite("orchestra demo", .timeLimit(.minutes(5)), .takesTurns)
struct DemoCommandTests {
    /// Every scenario, in the order `orchestra demo` plays them (the names `--scenario` takes).
    static let scenarios = [
        "out-of-order", "ordered", "serial", "limit-2", "graph", "chain", "token-refresh", "failures",
    ]

    @Test(
        "the demo plays every scenario, the facts it measured hold, and each trace has one event per job with no overlap in a lane"
    )
    func playsEveryScenario() async throws {
        let traces = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: traces) }

        let output = try await OrchestraExecutable.run(["demo", "--speed", "4", "--trace", traces.path])

        #expect(output.status == 0, "\(output)")
        let sections = DemoOutput(output.stdout).sections
        #expect(sections.map(\.name) == Self.scenarios, "\(output)")
        #expect(output.stdout.contains("Played all 8 scenarios"), "\(output)")
        #expect(!output.stdout.contains("\u{1B}["), "no escape codes when stdout is a pipe")

        // The demo server counted the requests in flight; each scenario prints that peak next
        // to the limit it ran with. The limit a scenario's name promises is checked on its own.
        for section in sections {
            let peak = try #require(
                section.number(after: "max concurrency seen by the server"), "\(section.name): \(section.text)")
            let limit = try #require(section.number(after: "\(peak) ≤ limit"), "\(section.name): \(section.text)")
            #expect(peak <= limit, "\(section.name): the server saw \(peak) requests at once, limit \(limit)")
            #expect(peak >= 1)
        }
        let serial = try #require(sections.first { $0.name == "serial" })
        #expect(
            serial.number(after: "max concurrency seen by the server") == 1, "one request at a time: \(serial.text)")
        let limitTwo = try #require(sections.first { $0.name == "limit-2" })
        #expect(try #require(limitTwo.number(after: "max concurrency seen by the server")) <= 2)
        let tokens = try #require(sections.first { $0.name == "token-refresh" })
        #expect(tokens.number(after: "refresh calls seen by the server") == 1, "\(tokens.text)")
        #expect(tokens.text.contains("requests that succeeded             200/200"), "\(tokens.text)")
        let failures = try #require(sections.first { $0.name == "failures" })
        #expect(failures.text.contains("jobs that ended (none hangs)            4/4"), "\(failures.text)")
        #expect(failures.text.contains("CallbackError.abandoned") && failures.text.contains("TimeoutError"))
        let ordered = try #require(sections.first { $0.name == "ordered" })
        #expect(
            ordered.text.contains("handled order                       img-1 img-2 img-3 img-4 img-5 img-6 img-7 img-8")
        )

        // One trace event and one bar per job that ran: every job the scenario set out to run
        // (the second number of "· 1/4 succeeded"), plus the refresh the server saw, which
        // has its own lane. A job that never started would have no event.
        for (number, section) in sections.enumerated() {
            let base = String(format: "%02d-%@", number + 1, section.name)
            let counted = try #require(section.number(after: "/", onLineWith: "wall time"), "\(base): \(section.text)")
            let jobs = counted + (section.number(after: "refresh calls seen by the server") ?? 0)
            let trace = try ChromeTrace(contentsOf: traces.appendingPathComponent("\(base).trace.json"))
            #expect(
                trace.completeEvents.count == jobs, "\(base): \(trace.completeEvents.count) events for \(jobs) jobs")
            #expect(Set(trace.completeEvents.map(\.name)).count == jobs, "\(base): one event per job")
            #expect(trace.overlapsInALane.isEmpty, "\(base): overlapping events \(trace.overlapsInALane)")
            let html = try String(contentsOf: traces.appendingPathComponent("\(base).html"), encoding: .utf8)
            #expect(html.hasPrefix("<!DOCTYPE html>"))
            #expect(
                !html.contains("<script src") && !html.contains("<link "), "the page loads nothing from the network")
            #expect(html.components(separatedBy: "class=\"bar ").count - 1 == jobs, "\(base): one bar per job")
        }
    }

    @Test("--url points scenarios 1–4 at other URLs; the facts are then counted by the client")
    func customURLs() async throws {
        try await withDemoServer { server in
            let urls = (1...3).map { "\(server.baseURL.absoluteString)/payload/\(1_000 * $0)?latency_ms=5" }
            let output = try await OrchestraExecutable.run(
                ["demo", "--scenario", "out-of-order,limit-2"] + urls.flatMap { ["--url", $0] }
            )

            #expect(output.status == 0, "\(output)")
            let sections = DemoOutput(output.stdout).sections
            #expect(sections.map(\.name) == ["out-of-order", "limit-2"])
            for section in sections {
                #expect(section.text.contains(urls[0]), "the URLs are shown")
                let peak = try #require(
                    section.number(after: "max concurrency (counted by the client)"), "\(section.text)")
                #expect(peak <= (section.name == "limit-2" ? 2 : 8))
            }
            // Each scenario fetched each URL once, from this server.
            for bytes in [1_000, 2_000, 3_000] {
                #expect(server.arrivals(of: "/payload/\(bytes)") == 2)
            }
        }
    }

    @Test(
        "--transport urlsession plays a scenario over URLSession (AsyncHTTPClient, the default on Linux, plays them all above)"
    )
    func urlSessionTransport() async throws {
        let output = try await OrchestraExecutable.run([
            "demo", "--scenario", "graph", "--speed", "8", "--transport", "urlsession",
        ])
        #expect(output.status == 0, "\(output)")
        #expect(DemoOutput(output.stdout).sections.map(\.name) == ["graph"], "\(output)")
        #expect(output.stdout.contains("Played 1 scenario"), "\(output)")
    }

    @Test(
        "bad options exit with status 2 and name the option and the value",
        arguments: [
            (["demo", "--scenario", "nope"], "--scenario: unknown scenario 'nope'"),
            (
                ["demo", "--url", "ftp://example.com/a", "--url", "http://example.com/b"],
                "--url: 'ftp://example.com/a' is not an http(s) URL"
            ),
            (["demo", "--url", "http://example.com/a"], "--url: give at least 2 URLs"),
            (["demo", "--speed", "0"], "--speed: must be a number from 0.01 to 1000, got '0'"),
            (["demo", "--scenario", ""], "--scenario: give at least one scenario name or number"),
            (["demo", "--port", "8080"], "--port: only with --serve"),
            (["demo", "--speed", "1e-300"], "--speed: must be a number from 0.01 to 1000, got '1e-300'"),
            (["demo", "--speed", "1e300"], "--speed: must be a number from 0.01 to 1000, got '1e+300'"),
            (
                ["demo", "--trace", OrchestraExecutable.packageRoot.appendingPathComponent("README.md").path],
                "README.md' is a file, not a folder"
            ),
            (["demo", "--port", "70000", "--serve"], "--port: must be 0…65535, got 70000"),
        ])
    func badOptions(arguments: [String], message: String) async throws {
        let output = try await OrchestraExecutable.run(arguments)
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains(message), "\(output)")
        #expect(output.stdout.isEmpty, "nothing was played")
    }

    @Test("--serve on a port that is taken exits 2 and says so")
    func servingOnATakenPort() async throws {
        try await withDemoServer { server in
            let port = try #require(server.baseURL.port)
            let output = try await OrchestraExecutable.run(["demo", "--serve", "--port", "\(port)"])
            #expect(output.status == 2, "\(output)")
            #expect(
                output.stderr.contains("--port: cannot listen on 127.0.0.1:\(port): the port is already in use"),
                "\(output)")
        }
    }
}

/// The demo's output cut at each scenario's `━━ n/7 · name ━━` header.
struct DemoOutput {
    struct Section {
        let name: String
        let text: String

        /// The first integer after `label` on its line: `max concurrency seen by the server  2 ≤ limit 2`.
        func number(after label: String) -> Int? {
            guard let range = text.range(of: label) else { return nil }
            let rest = text[range.upperBound...].drop { $0 == " " }
            return Int(rest.prefix { $0.isNumber })
        }

        /// The first integer after `separator` on the line that contains `label`:
        /// `number(after: "/", onLineWith: "wall time")` reads 8 in `wall time  400 ms · 8/8 succeeded`.
        func number(after separator: String, onLineWith label: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.contains(label) }),
                let range = line.range(of: separator, options: .backwards)
            else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    let sections: [Section]

    init(_ text: String) {
        var sections: [Section] = []
        for chunk in text.components(separatedBy: "━━ ").dropFirst() {
            // "1/7 · out-of-order ━━━…"
            guard let dot = chunk.range(of: " · ") else { continue }
            let name = chunk[dot.upperBound...].prefix { $0 != " " }
            sections.append(Section(name: String(name), text: chunk))
        }
        self.sections = sections
    }
}
