import OrchestraTestKit
import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

/// Random DAGs run for real, with failures, timeouts, abandoned callbacks and cancellations
/// injected. Whatever the interleaving: every edge is respected, the limit holds, and every
/// node reaches exactly one terminal state. Each case prints its seed.
@Suite("TaskGraph property tests", .timeLimit(.minutes(2)), .takesTurns)
struct TaskGraphPropertyTests {
    enum Fault: CaseIterable { case none, fails, hangsUntilTimeout, abandonsCallback }

    @Test(arguments: [(1 as UInt64, 300), (2, 2_000), (3, 10_000)])
    func randomGraphsKeepEveryRule(seed: UInt64, count: Int) async throws {
        var generator = SplitMix64(seed: seed)
        let clock = ManualClock()
        let graph = TaskGraph()
        var dependencies: [[Int]] = []
        for index in 0..<count {
            let picks = index == 0 ? 0 : Int.random(in: 0...min(5, index), using: &generator)
            let deps = Array(
                Set((0..<picks).map { _ in Int.random(in: max(0, index - 200)..<index, using: &generator) }))
            dependencies.append(deps)
            let roll = Int.random(in: 0..<300, using: &generator)
            let fault: Fault = roll < 1 ? .fails : roll < 2 ? .hangsUntilTimeout : roll < 3 ? .abandonsCallback : .none
            let options = NodeOptions(timeout: fault == .hangsUntilTimeout ? .seconds(1) : nil)
            graph.add(id: "n\(index)", dependsOn: deps.map { "n\($0)" }, options: options) { _ in
                switch fault {
                case .none: return 0
                case .fails: throw TestError("n\(index)")
                case .hangsUntilTimeout:
                    try await clock.sleep(for: .seconds(3_600))
                    return 0
                case .abandonsCallback:
                    let _: Int = try await withCallback(diagnostics: .ignore) { _ in }
                    return 0
                }
            }
        }
        let limit = Int.random(in: 1...16, using: &generator)
        let cancelled = Set((0..<max(1, count / 100)).map { _ in Int.random(in: 0..<count, using: &generator) })

        // Timeouts fire whenever something sleeps on the clock; the invariants below hold for
        // any interleaving, so the driver need not be in step with the run.
        let driver = Task {
            while !Task.isCancelled {
                try await clock.waitForSleepers(1, timeout: .seconds(600))
                clock.advanceToNextDeadline()
            }
        }
        let events = try await graph.withRun(limit: limit, eventBuffer: count * 4, clock: clock) { run in
            for node in cancelled { run.cancel(id: "n\(node)") }
            _ = try await run.result
            var events: [GraphEvent] = []
            for await event in run.events { events.append(event) }
            return events
        }
        driver.cancel()

        let context = "seed \(seed), \(count) nodes, limit \(limit)"
        var startedAt: [String: Int] = [:]
        var endedAt: [String: Int] = [:]
        var running = 0
        var maxRunning = 0
        for (position, event) in events.enumerated() {
            switch event.kind {
            case .started:
                if startedAt[event.node] == nil { startedAt[event.node] = position }
                running += 1
                maxRunning = max(maxRunning, running)
            case .retrying:
                running -= 1
            case .succeeded, .failed, .timedOut, .cancelled, .skipped:
                #expect(endedAt[event.node] == nil, "\(context): \(event.node) ended twice")
                endedAt[event.node] = position
                if startedAt[event.node] != nil, !isSkip(event.kind) { running -= 1 }
            case .added:
                break
            }
        }
        #expect(endedAt.count == count, "\(context): every node ends exactly once")
        #expect(maxRunning <= limit, "\(context)")
        for node in 0..<count {
            guard let start = startedAt["n\(node)"] else { continue }
            for dependency in dependencies[node] {
                let end = try #require(endedAt["n\(dependency)"], "\(context)")
                #expect(end < start, "\(context): n\(node) started before n\(dependency) ended")
            }
        }
    }

    private func isSkip(_ kind: GraphEvent.Kind) -> Bool {
        if case .skipped = kind { return true }
        return false
    }
}
