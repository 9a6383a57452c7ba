import Foundation
import HTTPTypes
import Hummingbird
import Orchestra

/// A job to poll (issue 37, `until:`): `POST /jobs?polls=N` starts one and answers
/// `201 {"id":"job-1","status":"running","polls":0}`; `GET /jobs/{id}` counts a poll and
/// answers `{"id":…,"status":"running","polls":k}` until the `N`th poll, which (like every
/// later one) answers `"status":"done"` with a `result`. `N` is 1…10,000 (3 by default; 0 is
/// taken as 1). Unknown ids are 404. At most ``DemoJobs/maximumJobs`` jobs are kept: starting
/// one more forgets the oldest, so memory stays bounded.
extension DemoRoutes {
    static func addJobRoutes(to router: Router<BasicRequestContext>, state: DemoServerState) {
        router.post("/jobs") { request, _ -> Response in
            let polls = request.uri.queryParameters.get("polls").map { Int(String($0)) } ?? 3
            guard let polls, (0...DemoJobs.maximumPolls).contains(polls) else {
                throw HTTPError(.badRequest, message: "polls must be a number from 0 to \(DemoJobs.maximumPolls)")
            }
            let id = state.jobs.withLock { $0.start(polls: max(1, polls)) }
            return jobResponse(.created, id: id, done: false, polls: 0)
        }
        router.get("/jobs/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            guard let (done, polls) = state.jobs.withLock({ $0.poll(id) }) else {
                throw HTTPError(.notFound, message: "no job \(id)")
            }
            return jobResponse(.ok, id: id, done: done, polls: polls)
        }
    }

    private static func jobResponse(_ status: HTTPResponse.Status, id: String, done: Bool, polls: Int) -> Response {
        let result = done ? ",\"result\":{\"url\":\"/jobs/\(id)/result\"}" : ""
        let json = "{\"id\":\"\(id)\",\"status\":\"\(done ? "done" : "running")\",\"polls\":\(polls)\(result)}"
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: json)))
    }
}

/// The jobs of one demo server: how many polls each needs and has had.
struct DemoJobs: Sendable {
    static let maximumJobs = 10_000
    static let maximumPolls = 10_000

    private var jobs: [String: (needed: Int, polled: Int)] = [:]
    /// Ids in the order they started, to forget the oldest.
    private var order: [String] = []
    private var oldest = 0
    private var next = 1

    /// Starts a job that is done at its `polls`th poll; returns its id.
    mutating func start(polls: Int) -> String {
        let id = "job-\(next)"
        next += 1
        if jobs.count >= Self.maximumJobs {
            jobs[order[oldest]] = nil
            oldest += 1
            if oldest >= Self.maximumJobs {
                order.removeFirst(oldest)
                oldest = 0
            }
        }
        jobs[id] = (polls, 0)
        order.append(id)
        return id
    }

    /// Jobs kept, and ids held in the eviction order (for the tests of the bound).
    var count: Int { jobs.count }
    var pendingOrder: Int { order.count }

    /// Counts a poll of `id`: whether it is done and how many polls it has had; `nil` for an
    /// unknown job.
    mutating func poll(_ id: String) -> (done: Bool, polls: Int)? {
        guard var job = jobs[id] else { return nil }
        job.polled = min(job.polled + 1, Self.maximumPolls)
        jobs[id] = job
        return (job.polled >= job.needed, job.polled)
    }
}
