import Benchmark
import Foundation
import HTTPTypes
import Orchestra
import OrchestraAsyncHTTPClient
import OrchestraDemoServer
import OrchestraHTTP

/// Benchmark 8: coordinator overhead. 10,000 small GETs (`/echo/…`, a few bytes) against the
/// demo server on 127.0.0.1, at most 32 at once, over one `URLSessionTransport`:
///
/// - `HTTP 10k GETs/URLSession window (baseline)`: a hand-written TaskGroup window of 32 that
///   calls `transport.send` directly.
/// - `HTTP 10k GETs/HTTPCoordinator`: `concurrentMap(limit: 32)` over `coordinator.data(for:)`
///   with `maxConcurrentRequests: 32` (admission, timeout, retry wrapper on every request).
///
/// `HTTP AHC 10k GETs/…`: the same two over `AsyncHTTPClientTransport` (64 connections per
/// host; the client is made and shut down outside the measurement).
///
/// The server runs in the benchmark's process (started in `setup`, stopped in `teardown`), so
/// both sides share the two cores with it. Target: the coordinator within 10 % of the window.
enum HTTPWorkload {
    static let count = 10_000
    static let limit = 32

    /// The running server, and the task that runs it.
    nonisolated(unsafe) static var server: DemoServer?
    nonisolated(unsafe) static var serverTask: Task<Void, any Error>?

    static func start() async throws {
        let ready = AsyncStream<DemoServer>.makeStream()
        // Unstructured: the server must outlive `setup` and run until `teardown`.
        serverTask = Task {
            try await DemoServer.run { ready.continuation.yield($0) }
        }
        var iterator = ready.stream.makeAsyncIterator()
        server = await iterator.next()
    }

    static func stop() async {
        serverTask?.cancel()
        _ = await serverTask?.result
        server = nil
    }

    static func requests(_ server: DemoServer) -> [HTTPRequest] {
        (0..<count).map { HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: "/echo/\($0)") }
    }

    static func window(_ requests: [HTTPRequest], transport: some HTTPTransport) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0
            var bytes = 0
            while next < min(limit, requests.count) {
                let request = requests[next]
                group.addTask { try await transport.send(request, body: nil).1.count }
                next += 1
            }
            while let received = try await group.next() {
                bytes += received
                if next < requests.count {
                    let request = requests[next]
                    group.addTask { try await transport.send(request, body: nil).1.count }
                    next += 1
                }
            }
            return bytes
        }
    }
}

func registerHTTPBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 8
    )
    let setup: @Sendable () async throws -> Void = { try await HTTPWorkload.start() }
    let teardown: @Sendable () async throws -> Void = { await HTTPWorkload.stop() }

    Benchmark(
        "HTTP 10k GETs/URLSession window (baseline)", configuration: configuration,
        closure: { benchmark in
            let transport = URLSessionTransport()
            let requests = HTTPWorkload.requests(HTTPWorkload.server!)
            benchmark.startMeasurement()
            blackHole(try await HTTPWorkload.window(requests, transport: transport))
        }, setup: setup, teardown: teardown)

    Benchmark(
        "HTTP 10k GETs/HTTPCoordinator", configuration: configuration,
        closure: { benchmark in
            let transport = URLSessionTransport()
            let api = HTTPCoordinator(
                transport: transport,
                configuration: .init(
                    maxConcurrentRequests: HTTPWorkload.limit, maxConcurrentRequestsPerHost: HTTPWorkload.limit))
            let requests = HTTPWorkload.requests(HTTPWorkload.server!)
            benchmark.startMeasurement()
            let sizes = try await requests.concurrentMap(limit: HTTPWorkload.limit) {
                try await api.data(for: $0).body.count
            }
            blackHole(sizes.reduce(0, +))
        }, setup: setup, teardown: teardown)

    Benchmark(
        "HTTP AHC 10k GETs/AsyncHTTPClient window (baseline)", configuration: configuration,
        closure: { benchmark in
            let requests = HTTPWorkload.requests(HTTPWorkload.server!)
            try await AsyncHTTPClientTransport.withTransport { transport in
                benchmark.startMeasurement()
                blackHole(try await HTTPWorkload.window(requests, transport: transport))
                benchmark.stopMeasurement()
            }
        }, setup: setup, teardown: teardown)

    Benchmark(
        "HTTP AHC 10k GETs/HTTPCoordinator", configuration: configuration,
        closure: { benchmark in
            let requests = HTTPWorkload.requests(HTTPWorkload.server!)
            try await AsyncHTTPClientTransport.withTransport { transport in
                let api = HTTPCoordinator(
                    transport: transport,
                    configuration: .init(
                        maxConcurrentRequests: HTTPWorkload.limit, maxConcurrentRequestsPerHost: HTTPWorkload.limit))
                benchmark.startMeasurement()
                let sizes = try await requests.concurrentMap(limit: HTTPWorkload.limit) {
                    try await api.data(for: $0).body.count
                }
                benchmark.stopMeasurement()
                blackHole(sizes.reduce(0, +))
            }
        }, setup: setup, teardown: teardown)
}
