import ArgumentParser
import OrchestraAsyncHTTPClient
import OrchestraHTTP
import OrchestraWorkflow

/// `--transport asynchttpclient|urlsession`, shared by `orchestra run` and `orchestra demo`:
/// which HTTP client sends the requests.
///
/// On Linux the default is AsyncHTTPClient: Foundation's URLSession there is several times
/// slower on loopback (about 4,000 requests/s against 10,000–19,000) and has bugs of its own.
/// On Apple platforms URLSession, the system's client, stays the default.
struct TransportOptions: ParsableArguments {
    enum Kind: String, ExpressibleByArgument, CaseIterable, Sendable {
        case asynchttpclient
        case urlsession

        #if os(Linux)
        static let platformDefault = Kind.asynchttpclient
        #else
        static let platformDefault = Kind.urlsession
        #endif
    }

    @Option(
        help: ArgumentHelp(
            """
            The HTTP client that sends the requests: asynchttpclient (AsyncHTTPClient over \
            SwiftNIO; the default on Linux, where it is the faster) or urlsession (Foundation's \
            URLSession; the default on Apple platforms).
            """,
            valueName: "client"
        )
    )
    var transport: Kind = .platformDefault

    /// Runs `body` with a transport of the chosen kind, then releases it however `body` ends:
    /// AsyncHTTPClient's client is shut down (after `body` returns or throws, and so after a
    /// run a signal cancelled), URLSession's sessions are invalidated when the transport is
    /// released.
    ///
    /// The transport allows `connectionsPerHost` connections to one host: a workflow's
    /// ``WorkflowLimits/connectionsPerHost`` (its `limit`, at least 64), so that the client never
    /// queues requests the coordinator has let through.
    ///
    /// Cancelling the calling task cancels the requests in flight (each transport ends them
    /// with `CancellationError`); the client is still shut down.
    func withTransport<T: Sendable>(
        connectionsPerHost connections: Int = WorkflowLimits.minimumConnectionsPerHost,
        _ body: (any HTTPTransport) async throws -> T
    ) async throws -> T {
        switch transport {
        case .asynchttpclient:
            return try await AsyncHTTPClientTransport.withTransport(maximumConnectionsPerHost: connections) {
                transport in
                try await body(transport)
            }
        case .urlsession:
            return try await body(URLSessionTransport(maximumConnectionsPerHost: connections))
        }
    }
}
