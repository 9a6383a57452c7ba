import TestSupport
import Testing

@testable import OrchestraDemoServer

/// The demo server's jobs (`POST /jobs?polls=N`, `GET /jobs/{id}`): done at the Nth poll, and
/// at most `DemoJobs.maximumJobs` kept however many are started.
@Suite("Demo server: jobs", .timeLimit(.minutes(1)), .takesTurns)
struct DemoJobsTests {
    @Test func aJobIsDoneAtItsNthPollAndStaysDone() {
        var jobs = DemoJobs()
        let id = jobs.start(polls: 3)
        #expect((1...5).map { _ in jobs.poll(id)?.done } == [false, false, true, true, true])
        #expect(jobs.poll("job-999") == nil)
    }

    /// 10× the bound: the oldest are forgotten, memory stays bounded.
    @Test func startingMoreThanTheBoundForgetsTheOldest() {
        var jobs = DemoJobs()
        let ids = (0..<(10 * DemoJobs.maximumJobs)).map { _ in jobs.start(polls: 1) }
        #expect(jobs.poll(ids[0]) == nil)
        #expect(jobs.poll(ids[ids.count - DemoJobs.maximumJobs - 1]) == nil)
        #expect(jobs.poll(ids[ids.count - DemoJobs.maximumJobs])?.done == true)
        #expect(jobs.poll(ids[ids.count - 1])?.done == true)
        #expect(jobs.count == DemoJobs.maximumJobs && jobs.pendingOrder <= 2 * DemoJobs.maximumJobs)
    }
}
