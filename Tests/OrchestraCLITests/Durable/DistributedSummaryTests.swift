import OrchestraDurableHTTP
import Testing

@testable import OrchestraCLI

/// The closing line's counts of a run handed to workers.
@Suite("orchestra run --state postgres://…: what the closing line counts", .takesTurns)
struct DistributedSummaryTests {
    @Test(
        "a job already stored in a run this coordinator created is its own append tried again, not one read back; in a run it goes on with, one read back",
        arguments: [(true, 10, 0), (false, 7, 3)])
    func storedJobsCountAsReadBackOnlyInARunGoneOnWith(created: Bool, requests: Int, reused: Int) {
        // 7 appended, 3 found stored (in a new run: appended by a first try whose commit was not seen).
        let summary = DistributedRun.Summary(
            runID: "run", location: "the store", counts: .init(appended: 7, reused: 3, unanswered: 1),
            created: created, abandoned: 0, state: .succeeded)
        #expect(summary.requests == requests && summary.reused == reused && summary.unanswered == 1)
    }
}
