import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraHTTP

/// A response whose status is not 2xx.
struct UnexpectedStatus: Error, CustomStringConvertible {
    let result: HTTPResult
    var description: String { "HTTP \(result.status.code) \(result.status.reasonPhrase)" }
}

/// A fact the demo measured, checked against what the scenario promises
/// (`server max concurrency 2 ≤ limit 2 ✓`).
struct Fact: Sendable {
    let name: String
    let value: String
    /// `nil` when there is nothing to check, only something to show.
    let holds: Bool?
}

/// What a scenario works with: the demo server (or the user's URLs), an HTTP coordinator, its
/// lanes on the timeline, its log and its facts.
struct Stage: Sendable {
    let recorder: Recorder
    /// The demo server everything runs against (scenarios 1–4 may use `--url`s instead).
    let server: DemoServer
    /// The eight downloads of scenarios 1–4.
    let images: [DemoImage]
    /// Whether `images` are the user's `--url`s rather than the demo server's.
    let usesCustomURLs: Bool
    /// Sends the requests: no limit of its own (the scenario sets the limits), no retries.
    let http: HTTPCoordinator
    /// The transport under `http`, for scenarios that need a coordinator of their own.
    let transport: any HTTPTransport
    /// How much faster than nominal the server's latencies are asked to be.
    let speed: Double
    private let facts: Locked<[Fact]>

    init(
        recorder: Recorder, server: DemoServer, images: [DemoImage], usesCustomURLs: Bool, transport: any HTTPTransport,
        speed: Double
    ) {
        self.recorder = recorder
        self.server = server
        self.images = images
        self.usesCustomURLs = usesCustomURLs
        self.transport = transport
        self.speed = speed
        http = HTTPCoordinator(
            transport: transport,
            configuration: .init(
                maxConcurrentRequests: 1_024, maxConcurrentRequestsPerHost: 1_024, requestTimeout: .seconds(30),
                retry: .never)
        )
        facts = Locked([])
    }

    /// A nominal latency in milliseconds, divided by the speed factor.
    func scaled(_ nominalMilliseconds: Int) -> Int {
        max(0, Int((Double(nominalMilliseconds) / speed).rounded()))
    }

    /// A demo-server URL: `path` with `latency_ms` set to the scaled `latency`.
    func url(_ path: String, latency nominalMilliseconds: Int? = nil) -> URL {
        let url = server.baseURL.appendingPathComponent(path)
        guard let nominalMilliseconds else { return url }
        return url.appending(queryItems: [URLQueryItem(name: "latency_ms", value: "\(scaled(nominalMilliseconds))")])
    }

    /// Time since the scenario started.
    var now: Duration { recorder.elapsed }

    func lane(_ image: DemoImage) -> Lane {
        lane(named: image.name)
    }

    func lane(named name: String) -> Lane {
        Lane(recorder: recorder, index: recorder.lane(named: name))
    }

    /// Writes a line to the scenario's log.
    func note(_ text: String, tone: LogEntry.Tone = .plain) {
        recorder.note(text, tone: tone)
    }

    /// Records a measured fact; `holds: false` makes the demo fail.
    func fact(_ name: String, _ value: String, holds: Bool? = nil) {
        facts.withLock { $0.append(Fact(name: name, value: value, holds: holds)) }
    }

    /// The facts recorded so far.
    var recordedFacts: [Fact] { facts.withLock { $0 } }

    /// Runs `body` as the lane's whole job: a running segment, then the lane finishes with
    /// its outcome. Errors are recorded and rethrown.
    func perform<Value>(_ lane: Lane, _ body: () async throws -> Value) async throws -> Value {
        do {
            let value = try await lane.run(body)
            lane.finish(.ok)
            return value
        } catch {
            lane.finish(.failed(error))
            throw error
        }
    }

    /// `GET url` through `coordinator` (the stage's own by default); a status other than 2xx
    /// is an error.
    func get(_ url: URL, through coordinator: HTTPCoordinator? = nil) async throws -> HTTPResult {
        try await send(HTTPRequest(method: .get, url: url), through: coordinator)
    }

    /// Sends `request`; a status other than 2xx is an ``UnexpectedStatus``.
    func send(
        _ request: HTTPRequest, body: Data? = nil, through coordinator: HTTPCoordinator? = nil
    ) async throws -> HTTPResult {
        let result = try await (coordinator ?? http).data(for: request, body: body)
        guard result.status.kind == .successful else { throw UnexpectedStatus(result: result) }
        return result
    }

    /// Downloads one image, recorded on its lane.
    func download(_ image: DemoImage) async throws -> Download {
        try await perform(lane(image)) {
            let result = try await get(image.url)
            return Download(image: image, bytes: result.body.count, finishedAt: now)
        }
    }
}

/// A row of the timeline, as the scenario code sees it.
struct Lane: Sendable {
    let recorder: Recorder
    let index: Int

    /// From now on the lane waits (at a semaphore, a gate, …) until it runs or finishes.
    func waiting() {
        recorder.open(index, .waiting)
    }

    /// Runs one attempt of work; if it throws, the segment shows as a failed attempt.
    func run<Value>(_ body: () async throws -> Value) async throws -> Value {
        recorder.open(index, .running)
        do {
            let value = try await body()
            recorder.close(index, failed: false)
            return value
        } catch {
            recorder.close(index, failed: true)
            throw error
        }
    }

    /// The lane's job is over; counts towards progress.
    func finish(_ outcome: Outcome) {
        recorder.finish(index, outcome)
    }
}
