import Foundation
import HTTPTypes
import Orchestra
import OrchestraDurable
import OrchestraDurableHTTP
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

@Suite("Durable HTTP: a coordinator's requests sent by durable workers", .timeLimit(.minutes(1)), .takesTurns)
struct DurableHTTPTransportTests {
    /// A fresh SQLite file, removed after `body`.
    static func withStoreFile<T>(_ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("orchestra-durable-http-\(UUID().uuidString).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        return try await body(path)
    }

    /// A server in memory that echoes the method, path and body, and says which request it was.
    static func echoServer() -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, body in
            var response = HTTPResponse(status: .created)
            response.headerFields[.contentType] = "text/plain"
            let text =
                "\(request.method.rawValue) \(request.path ?? "") \(String(decoding: body ?? Data(), as: UTF8.self))"
            return (response, Data(text.utf8))
        }
    }

    static func request(_ method: HTTPRequest.Method, _ path: String) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "https", authority: "api.example.com", path: path)
    }

    /// Runs `body` with a coordinator whose transport hands requests to a worker of the same
    /// queue (working until `body` returns), on run `runID` of the store at `path`.
    static func withProducer<T: Sendable>(
        path: String, runID: String, server: ScriptedHTTPTransport,
        _ body: (HTTPCoordinator, DurableHTTPTransport) async throws -> T
    ) async throws -> T {
        let queue = DurableQueue(store: try SQLiteJobStore(path: path), worker: "in-process")
        queue.registerHTTPJobs(sendingThrough: server)
        try await queue.open(runID: runID, limit: 4, resourceLimits: ["host:api.example.com": 2])
        let stop = DurableStopSignal()
        let worker = Task { try await queue.work(limit: 4, until: stop) }
        defer { stop.request() }
        let result = try await queue.withOutcomes(of: runID) { outcomes in
            let transport = DurableHTTPTransport(
                queue: queue, runID: runID, outcomes: outcomes, maximumConnectionsPerHost: 4,
                resource: { $0.authority == "api.example.com" ? "host:api.example.com" : nil })
            return try await body(HTTPCoordinator(transport: transport), transport)
        }
        stop.request()
        try await worker.value
        return result
    }

    @Test func aRequestSentThroughTheCoordinatorIsSentByAWorkerAndItsResponseReturned() async throws {
        try await Self.withStoreFile { path in
            let server = Self.echoServer()
            let counts = try await Self.withProducer(path: path, runID: "sync", server: server) {
                coordinator, transport in
                let get = try await coordinator.data(for: Self.request(.get, "/items/1"))
                #expect(get.status.code == 201)
                #expect(String(decoding: get.body, as: UTF8.self) == "GET /items/1 ")
                #expect(get.response.headerFields[.contentType] == "text/plain")
                let post = try await coordinator.data(for: Self.request(.post, "/items"), body: Data("{\"a\":1}".utf8))
                #expect(String(decoding: post.body, as: UTF8.self) == "POST /items {\"a\":1}")
                return transport.counts
            }
            #expect(counts == .init(appended: 2, reused: 0, unanswered: 0))
            #expect(server.requests.map(\.path) == ["/items/1", "/items"])

            // The run holds one job per request, each with the response the worker stored.
            let queue = DurableQueue(store: try SQLiteJobStore(path: path))
            let jobs = try await queue.jobs(of: "sync")
            #expect(jobs.count == 2 && jobs.allSatisfy { $0.state == .succeeded })
        }
    }

    @Test func aProducerStartedAgainReadsBackTheOutcomesStoredInsteadOfSendingAgain() async throws {
        try await Self.withStoreFile { path in
            let server = Self.echoServer()
            for _ in 1...2 {
                try await Self.withProducer(path: path, runID: "again", server: server) { coordinator, _ in
                    for page in 1...3 {
                        let result = try await coordinator.data(for: Self.request(.get, "/page/\(page)"))
                        #expect(String(decoding: result.body, as: UTF8.self) == "GET /page/\(page) ")
                    }
                }
            }
            #expect(server.requests.count == 3)
        }
    }

    @Test func aTransportErrorOnTheWorkerIsTheProducersAndABodyOverTheLimitIsRefusedBeforeItIsStored()
        async throws
    {
        try await Self.withStoreFile { path in
            let server = ScriptedHTTPTransport { request, _ in
                throw HTTPTransportError(code: .connectionRefused, message: "refused", host: request.authority)
            }
            let counts = try await Self.withProducer(path: path, runID: "errors", server: server) {
                coordinator, transport in
                let refused = await #expect(throws: HTTPTransportError.self) {
                    _ = try await coordinator.data(
                        for: Self.request(.get, "/down"),
                        options: HTTPRequestOptions(retry: HTTPRetry(policy: .never)))
                }
                #expect(refused?.code == .connectionRefused && refused?.host == "api.example.com")
                let large = Data(count: HTTPJob.maximumBodySize + 1)
                let tooLarge = await #expect(throws: HTTPTransportError.self) {
                    _ = try await transport.send(Self.request(.post, "/upload"), body: large)
                }
                #expect(tooLarge?.code == .invalidRequest && tooLarge?.message.contains("16777217 bytes") == true)
                return transport.counts
            }
            #expect(counts == .init(appended: 1, reused: 0, unanswered: 1))
        }
    }

    @Test func namedRequestsAreFoundByTheirNameWhateverTheirBytes() async throws {
        try await Self.withStoreFile { path in
            let server = Self.echoServer()
            var counts: [DurableHTTPTransport.Counts] = []
            for _ in 1...2 {
                // A new multipart boundary each time: the bytes differ, the request does not.
                let body = Data("--\(UUID().uuidString)\r\nfile\r\n".utf8)
                counts.append(
                    try await Self.withProducer(path: path, runID: "named", server: server) { coordinator, transport in
                        let result = try await DurableHTTPTransport.withJobName("upload[3]", atMostOnce: true) {
                            try await coordinator.data(for: Self.request(.post, "/upload"), body: body)
                        }
                        #expect(result.status.code == 201)
                        return transport.counts
                    })
            }
            #expect(server.requests.count == 1)
            #expect(counts == [.init(appended: 1), .init(reused: 1)])
            let jobs = try await DurableQueue(store: try SQLiteJobStore(path: path)).jobs(of: "named")
            #expect(jobs.map(\.id) == ["upload[3]#1"])
        }
    }

    /// A request whose job the run has already, ended, is answered from it at once: the append
    /// says the job was not added, so its outcome is read rather than waited for (no change will
    /// name it again). Sent twice under one name in one producer, once the listeners are up.
    @Test func aRequestWhoseJobTheRunHasEndedIsAnsweredFromItAtOnce() async throws {
        try await Self.withStoreFile { path in
            let server = Self.echoServer()
            let counts = try await Self.withProducer(path: path, runID: "again", server: server) {
                coordinator, transport in
                for _ in 1...3 {
                    let result = try await withHangGuard {
                        try await DurableHTTPTransport.withJobName("list") {
                            try await coordinator.data(for: Self.request(.get, "/items"))
                        }
                    }
                    #expect(result.status.code == 201)
                }
                return transport.counts
            }
            #expect(server.requests.count == 1)
            #expect(counts == .init(appended: 1, reused: 2))
        }
    }

    @Test func anAtMostOnceRequestWhoseWorkerDiedIsUncertainAndNotSentAgain() async throws {
        try await Self.withStoreFile { path in
            let epoch = Date(timeIntervalSince1970: 1_800_000_000)
            let store = try SQLiteJobStore(path: path)
            let producer = DurableQueue(store: store, worker: "producer", clock: ManualClock(), wallClockStart: epoch)
            try await producer.open(runID: "charges", limit: 4)
            let server = Self.echoServer()
            try await producer.withOutcomes(of: "charges") { outcomes in
                let transport = DurableHTTPTransport(queue: producer, runID: "charges", outcomes: outcomes)
                let sending = Task {
                    try await DurableHTTPTransport.withJobName("charge[0]", atMostOnce: true) {
                        try await transport.send(Self.request(.post, "/charges"), body: Data("{}".utf8))
                    }
                }
                try await waitUntil("the job is appended") { transport.counts.appended == 1 }
                // A worker claims it and dies: its lease runs to epoch + 10 s and is never renewed.
                let claimed = try await store.record(
                    [],
                    thenClaim: Claim(
                        worker: "dead", kinds: [HTTPJob.kind.name], limit: 8, now: epoch,
                        leaseExpiry: epoch.addingTimeInterval(10)),
                    now: epoch
                ).claimed
                #expect(claimed.map(\.key.jobID) == ["charge[0]#1"])
                // A live worker later: the expired lease ends the job uncertain, not ready again.
                let live = DurableQueue(
                    store: store, worker: "live", clock: ManualClock(), wallClockStart: epoch.addingTimeInterval(20))
                live.registerHTTPJobs(sendingThrough: server)
                let stop = DurableStopSignal()
                let working = Task { try await live.work(limit: 4, until: stop) }
                let error = await #expect(throws: HTTPJobUncertainError.self) {
                    try await withHangGuard { try await sending.value }
                }
                stop.request()
                try await working.value
                #expect(error?.method == "POST" && error?.jobID == "charge[0]#1")
                #expect(
                    error?.reason.hasPrefix("may have been sent: worker 'dead'") == true, "\(String(describing: error))"
                )
            }
            #expect(server.requests.isEmpty, "an at-most-once request was sent again")
        }
    }

    @Test func freshRequestsAreSentByEveryProducerAndNeverReadBack() async throws {
        try await Self.withStoreFile { path in
            let server = Self.echoServer()
            for _ in 1...2 {
                let counts = try await Self.withProducer(path: path, runID: "fresh", server: server) {
                    coordinator, transport in
                    _ = try await DurableHTTPTransport.withFreshJobs {
                        try await coordinator.data(for: Self.request(.post, "/login"), body: Data("{}".utf8))
                    }
                    return transport.counts
                }
                #expect(counts == .init(appended: 1))
            }
            #expect(server.requests.map(\.path) == ["/login", "/login"])
        }
    }
}
