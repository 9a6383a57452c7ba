import Foundation
import Hummingbird
import Orchestra
import ServiceLifecycle

/// A real HTTP server on 127.0.0.1 for the demo and the tests: payloads of any size and
/// latency (eight images of a photo gallery), a login/refresh pair whose tokens expire, a protected
/// endpoint, a flaky endpoint, one that never answers, and counters (requests in flight and
/// their peak, refresh calls, arrivals per path).
///
/// Endpoints (all `GET` unless said):
/// - `/payload/{bytes}?latency_ms=N` — `bytes` bytes after `N` ms.
/// - `/images/{0…7}?latency_ms=N` — eight gallery images: sizes and latencies from
///   ``DemoServer/images`` (`latency_ms` overrides the latency).
/// - `POST /login`, `POST /refresh` — `{"access_token": "…", "expires_in": seconds}`; a
///   refresh invalidates the previous token. `/refresh` answers 500 when
///   ``Configuration/refreshFails`` is set.
/// - `/protected` — 200 with the valid token as `Authorization: Bearer …`, else 401;
///   `/protected-200` — the same, but the rejection is a 200 with `{"error":"token_expired"}`.
/// - `/flaky/{key}?failures=N` — 503 with `Retry-After: 1` for the first `N` calls per key.
/// - `/gated/{name}` (GET or POST) — waits while the gate is closed (``closeGate()``), then answers.
/// - `/hang` — never answers (until the server stops).
/// - `/echo/{text}` — `text`; `POST /echo` — the request body, with its content type.
/// - `/album?latency_ms=N` — JSON: the eight images' paths and sizes, for "request B built from A".
/// - `/list/{n}` — JSON `{"count": n, "items": [0, 1, …, n-1]}` (n ≤ 1,000,000), a long list
///   for a `for_each`.
/// - `/me?latency_ms=N` — JSON about the user, with the valid token (checked after the
///   latency); else 401.
/// - `/users/{id}` — JSON: a user and two order ids.
/// - `/stats` — the counters as JSON.
/// - `/barrier/{name}?count=N` — waits until `N` (1…256, default 2) requests for
///   `/barrier/{name}` have arrived, counting those that came before, then answers `name`:
///   `N` requests that must all be in flight at once. Use a new name for each use.
/// - `/limited/{bucket}?limit=N&window=S&announce=none|ietf|x` — at most `N` (default 10)
///   requests per fixed window of `S` seconds (default 1) per bucket; beyond that 429 with
///   `Retry-After` (seconds to the window's end). `announce` adds the quota: `ietf` as
///   `RateLimit-Policy`/`RateLimit`, `x` as `X-RateLimit-Limit/-Remaining/-Reset` (a Unix time).
///   `/limited/{bucket}/stats` — JSON: `total`, `accepted`, `rejected`, and
///   `max_in_any_second`, the most requests any one second (sliding) held.
///
/// Routes with httpbin's names and answers, so that `HTTPTransportConformance` (in
/// `OrchestraTestKit`) can run against this server or a real httpbin:
/// - `/anything`, `/anything/{path…}` (any method) — JSON echo of the request: `method`,
///   `url`, `args` (the query), `headers` (each value's bytes read as ISO Latin-1, as httpbin
///   does), `data` (the body as UTF-8 text, else `data:application/octet-stream;base64,…`) and
///   `json`; and, beyond httpbin, `path` (path and query as received), `headersHex` (each
///   value's bytes in hex; repeated fields joined by `,`), `bodyLength` and `bodyBase64`.
///   Bodies up to 4 MiB. Header bytes that are not UTF-8 arrive as U+FFFD (the HTTP parser
///   decodes UTF-8).
/// - `/status/{code}?challenge=Basic|Digest|Bearer` (any method) — that status (200…599),
///   empty body; a 401 carries a `WWW-Authenticate` challenge of that kind (`Basic` by default).
/// - `/redirect-to?url=U&status_code=30x` (any method) — that status (302 unless 300…399)
///   with `Location: U` and a short text body.
/// - `/redirect/{n}` — a chain of `n` (1…100) 302s: to `/redirect/{n-1}`, the last to `/get`.
/// - `/get` — `GET /anything`.
/// - `/bytes/{n}` — `n` bytes of a fixed pattern, `application/octet-stream`.
/// - `/charset/{name}` — a text in another charset than UTF-8, with its `Content-Type`:
///   `latin1`, `windows-1252`, `utf-16` (with a byte order mark), `utf-16be`, `koi8-r`, and
///   `json-latin1` (UTF-8 JSON labelled Latin-1); see `DemoRoutes+Charsets.swift`.
///
/// Run it with ``withDemoServer(configuration:_:)`` (scoped, for tests) or ``run(configuration:onReady:)``.
public final class DemoServer: Sendable {
    /// How the demo server behaves.
    public struct Configuration: Sendable {
        /// The port; 0 (the default) lets the system pick a free one.
        public var port: Int
        /// Lifetime announced for tokens (`expires_in`).
        public var tokenLifetime: Duration
        /// `/refresh` answers 500.
        public var refreshFails: Bool
        /// `/refresh` answers with tokens that `/protected` never accepts.
        public var refreshIssuesInvalidTokens: Bool
        /// The address it listens on: `127.0.0.1` (the default), or `::1` to test IPv6.
        public var host: String
        /// Threads of the server's own that run its request handlers (2 by default); 0 runs them
        /// on Swift concurrency's shared pool, as a server in a process of its own does best.
        ///
        /// A server embedded in a busy process (a test run, the demo's scenarios) keeps answering
        /// on threads of its own while that process's tasks hold the shared pool, whose one thread
        /// per core a few long computations fill; on the pool, its clients' requests would wait
        /// for them and time out. (Before macOS 15 and iOS 18, which have no task executors, the
        /// handlers always run on the pool.)
        public var threads: Int

        /// The defaults: a free port on 127.0.0.1, hour-long tokens, a `/refresh` that works, two
        /// threads of its own.
        public init(
            port: Int = 0, tokenLifetime: Duration = .seconds(3_600), refreshFails: Bool = false,
            refreshIssuesInvalidTokens: Bool = false, host: String = "127.0.0.1", threads: Int = 2
        ) {
            self.host = host
            self.threads = threads
            self.port = port
            self.tokenLifetime = tokenLifetime
            self.refreshFails = refreshFails
            self.refreshIssuesInvalidTokens = refreshIssuesInvalidTokens
        }
    }

    /// The gallery's eight images, as an app downloads them: some large and slow.
    public static let images: [(bytes: Int, latency: Duration)] = [
        (48_000, .milliseconds(120)), (1_200_000, .milliseconds(900)), (64_000, .milliseconds(200)),
        (32_000, .milliseconds(80)), (2_400_000, .milliseconds(1_400)), (96_000, .milliseconds(300)),
        (16_000, .milliseconds(60)), (640_000, .milliseconds(600)),
    ]

    let state: DemoServerState
    /// The port the server listens on.
    public let port: Int

    init(state: DemoServerState, port: Int) {
        self.state = state
        self.port = port
    }

    /// `http://127.0.0.1:<port>` (`http://[::1]:<port>` on ``Configuration/host`` `::1`).
    public var baseURL: URL { URL(string: "http://\(authority)")! }
    /// `127.0.0.1:<port>`, the authority of its requests (`[::1]:<port>` on `::1`).
    public var authority: String {
        let host = state.configuration.host
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Requests being handled now.
    public var inFlight: Int { state.counters.withLock { $0.inFlight } }
    /// The most requests handled at once.
    public var peakInFlight: Int { state.counters.withLock { $0.peakInFlight } }
    /// Requests received.
    public var requestCount: Int { state.counters.withLock { $0.requests } }
    /// Calls of `/refresh`.
    public var refreshCalls: Int { state.counters.withLock { $0.refreshCalls } }
    /// Calls of `/login`.
    public var loginCalls: Int { state.counters.withLock { $0.loginCalls } }

    /// How many requests for `path` have arrived.
    public func arrivals(of path: String) -> Int {
        state.counters.withLock { $0.arrivals[path, default: 0] }
    }

    /// Waits until `count` requests for `path` have arrived (the "request arrived" signal that
    /// tests await before moving a manual clock).
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled.
    public func arrival(of path: String, count: Int = 1) async throws {
        try await state.arrivalEvent(path: path, count: count).wait()
    }

    /// Waits until the server has received `count` requests in total, counting those received
    /// before the call: a moment part-way through a client's run, such as the point at which a
    /// test kills the client.
    ///
    /// ```swift
    /// try await server.requests(reaching: server.requestCount + 500)
    /// ```
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled.
    public func requests(reaching count: Int) async throws {
        try await state.requestEvent(count: count).wait()
    }

    /// Zeroes the peak, to measure a new phase.
    public func resetPeak() {
        state.counters.withLock { $0.peakInFlight = $0.inFlight }
    }

    /// Makes the current token invalid, as if it had expired on the server.
    public func expireToken() {
        state.counters.withLock { $0.validToken = nil }
    }

    /// Logs in in-process and returns a valid token (for tests that start authenticated).
    public func issueToken() -> String {
        state.issueToken(refresh: false)
    }

    /// Holds `/gated/…` requests until ``openGate()``.
    public func closeGate() { state.gate.close() }
    /// Lets `/gated/…` requests through, those waiting and those to come.
    public func openGate() { state.gate.open() }

    /// Runs the server until the calling task is cancelled; `onReady` gets it once it listens.
    public static func run(
        configuration: Configuration = Configuration(), onReady: @escaping @Sendable (DemoServer) async -> Void
    ) async throws {
        let state = DemoServerState(configuration: configuration)
        let router = DemoRoutes.router(state: state)
        let app = Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "orchestra-demo"),
            onServerRunning: { channel in
                await onReady(DemoServer(state: state, port: channel.localAddress?.port ?? configuration.port))
            },
            logger: DemoRoutes.quietLogger
        )
        let services = ServiceGroup(configuration: .init(services: [app], logger: DemoRoutes.quietLogger))
        // Not a child task: cancellation would reach the server, which then stops accepting
        // by dropping the connections it is accepting (a SwiftNIO fatal error when one
        // becomes active); a graceful shutdown closes the listening socket first, then lets
        // the requests in flight end.
        let running: Task<Void, any Error>
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *), configuration.threads > 0 {
            // The service group's tasks, the server's connections among them, are child tasks:
            // they inherit the preference, so every handler runs on these threads.
            let executor = ThreadTaskExecutor(name: "demo-server", threads: configuration.threads)
            running = Task(executorPreference: executor) {
                defer { executor.stop() }
                try await services.run()
            }
        } else {
            running = Task { try await services.run() }
        }
        try await withTaskCancellationHandler {
            try await running.value
        } onCancel: {
            // Lets `/hang`, `/gated` and `/barrier` requests end, so the server can shut down.
            state.shutdown.signal()
            state.gate.open()
            // triggerGracefulShutdown is async; onCancel is not.
            Task { await services.triggerGracefulShutdown() }
        }
    }
}

/// Runs a demo server for the duration of `body`: started on a free port, stopped (and every
/// request it holds released) when `body` returns or throws.
public func withDemoServer<T: Sendable>(
    configuration: DemoServer.Configuration = DemoServer.Configuration(),
    _ body: @escaping @Sendable (DemoServer) async throws -> T
) async throws -> T {
    let ready = AsyncStream<DemoServer>.makeStream()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await DemoServer.run(configuration: configuration) { server in ready.continuation.yield(server) }
            return nil
        }
        var servers = ready.stream.makeAsyncIterator()
        guard let server = await servers.next() else { throw CancellationError() }
        do {
            let value = try await body(server)
            group.cancelAll()
            return value
        } catch {
            group.cancelAll()
            throw error
        }
    }
}
