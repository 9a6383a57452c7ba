import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// What a cancelled run reports, whatever its size: a `for_each` step's elements never started,
/// and the rows of a `--data` run never started.
@Suite("WorkflowRunner: what a cancellation reports", .timeLimit(.minutes(1)), .takesTurns)
struct CancelledRunCountTests {
    /// A `for_each` over `count` elements whose requests never answer, cancelled once the first
    /// window is in flight: every element is counted cancelled, and only the elements that were
    /// started have a report (building one per element made a Ctrl-C on 5,000,000 elements
    /// take 26 s).
    @Test(arguments: [false, true])
    func aLargeForEachCancelledCountsEveryElementAndListsOnlyThoseStarted(keepsItemReports: Bool) async throws {
        let count = 200_000
        let list = "[" + Array(repeating: "0", count: count).joined(separator: ",") + "]"
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/list" { return respond(200, list) }
            try await AsyncEvent().wait()  // never answers; ends when cancelled
            return respond()
        }
        let workflow = try parse(
            """
            limit: 4
            steps:
              - { id: list, url: "http://x.test/list", captures: { items: $ } }
              - { id: each, for_each: "{{list.items}}", url: "http://x.test/item/{{index}}" }
            """)
        let runner = WorkflowRunner(workflow: workflow, transport: transport, keepsItemReports: keepsItemReports)
        try await withHangGuard {
            let run = Task { await runner.run(clock: ManualClock()) }
            try await waitUntil("the limit's requests in flight") { transport.inFlight == 4 }
            run.cancel()
            let report = await run.value
            let each = try #require(report["each"])
            #expect(each.state == .cancelled)
            let counts = try #require(each.itemCounts)
            #expect(counts.total == count && counts.cancelled == count)
            #expect(counts.succeeded == 0 && counts.failed == 0)
            let items = try #require(each.items)
            #expect(items.count < 100, "only the elements started have a report: \(items.count)")
            #expect(items.allSatisfy { $0.state == .cancelled })
            #expect(items.map(\.id) == (0..<items.count).map { "each[\($0)]" })
        }
    }

    /// Cancelled with two rows in flight: they are cancelled, the six never started are not
    /// run, and no row failed.
    @Test func rowsNeverStartedAreNotRunNotFailed() async throws {
        let workflow = try Workflow.parse(
            DataRunTests.flow, file: "flow.yaml", environment: [:], dataColumns: ["user", "n"])
        let gate = AsyncGate(isOpen: false)
        let transport = DataRunTests.server(gate: gate)
        try await withHangGuard {
            let run = Task {
                await WorkflowRunner(workflow: workflow, transport: transport).run(
                    rows: DataRunTests.rows, parallel: 2, clock: ManualClock())
            }
            try await waitUntil("two rows waiting on their profile") {
                transport.requests.count { $0.path!.hasPrefix("/users/") } == 2
            }
            run.cancel()
            let report = await run.value
            #expect(report.succeededRows == 0)
            #expect(report.failedRows == 0)
            #expect(report.cancelledRows == 2)
            #expect(report.notStartedRows == 6)
        }
    }
}
