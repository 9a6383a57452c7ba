import Foundation
import Orchestra
public import OrchestraHTTP

/// The checks an `HTTPTransport` (OrchestraHTTP) must pass for an `HTTPCoordinator` to work
/// over it: every response returned as it is (statuses, 3xx, 401), bodies and headers byte for
/// byte, `CancellationError`, progress, no hidden connection limit, errors with codes.
///
/// Run it against the demo server (`OrchestraDemoServer`'s `withDemoServer`) or, for the
/// checks that use only httpbin's routes, a real httpbin; parameterize a Swift Testing test
/// over the checks so that each one passes or fails on its own:
///
/// ```swift
/// @Test(arguments: HTTPTransportConformance.Check.allCases.filter { !$0.needsProxy })
/// func myTransportConforms(_ check: HTTPTransportConformance.Check) async throws {
///     try await withDemoServer { server in
///         try await HTTPTransportConformance(transport: MyTransport(), server: server.baseURL).run(check)
///     }
/// }
/// ```
///
/// Every check is bounded by ``timeout`` (real time): a transport that hangs fails the check
/// with an ``HTTPTransportConformanceFailure`` instead of blocking the test run. This is a
/// guard, not a timing assertion; no check measures speed.
public struct HTTPTransportConformance: Sendable {
    /// One rule of the transport contract, checked on its own.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Statuses such as 404 and 500 are returned as responses, not thrown.
        case statusesAreReturned
        /// A 401 with a `Basic`, `Digest` or `Bearer` challenge comes back at once as a 401:
        /// the transport answers no challenge.
        case challengesReturnAtOnce
        /// A 301, 302, 303, 307 or 308 comes back as is, with its `Location` and body: the
        /// transport follows no redirect.
        case redirectsAreReturned
        /// The body of a `POST`, `PUT` and `PATCH` (every byte value, 100 000 bytes) arrives
        /// byte for byte.
        case bodiesArriveByteForByte
        /// A `GET` with a body either sends the body byte for byte or throws an
        /// `HTTPTransportError` with code `.bodyNotAllowed` before sending.
        case getWithBody
        /// Cancelling the task of a request the server holds ends it with `CancellationError`.
        /// Needs the demo server (`/barrier`).
        case cancellationThrowsCancellationError
        /// Progress reports never go back and end at the body's size (an empty body is
        /// reported as 0); `expected` is the body's size or `nil`.
        case progressIsReported
        /// 16 requests (or `maximumConnectionsPerHost`, if lower) are in flight at once to one
        /// host. Needs the demo server (`/barrier`).
        case manyRequestsInFlightToOneHost
        /// A non-ASCII header value arrives as its exact UTF-8 bytes, or the transport throws an
        /// `HTTPTransportError` naming the header before sending; never other bytes.
        case nonASCIIHeaderValues
        /// A refused connection throws an `HTTPTransportError` with code `.connectionRefused`,
        /// which is transient.
        case connectionRefusedIsTransient
        /// `send(_:content:progress:timeout:)` returns a response that comes in time, and ends a
        /// request the server holds with `TimeoutError` carrying the timeout given (0.2 s real
        /// time). Needs the demo server (`/barrier`).
        case timedSendThrowsTimeoutError
        /// A gzip body (`/gzip`) and a deflate body (`/deflate`) come back decoded, whatever
        /// asked for them.
        case compressedBodiesAreDecoded
        /// The limit of a body held in memory counts decoded bytes: 64 KB of gzip that inflate
        /// to 4 MB (`/gzip/zeros/4194304`) with `maximumSize` 1 MB throw an `HTTPTransportError`
        /// with code `.responseTooLarge`. Needs the demo server.
        case decodedBodiesAreLimited
        /// A body handed to an `HTTPResponseBodySink` (OrchestraHTTP) is never held whole: 8 MB
        /// (`/large/8388608`) arrive in parts, each smaller than the body, with the transport's
        /// own limit at 1 MB, and the body returned is empty. Needs the demo server.
        case bodiesStreamToASink
        /// With `decompresses: false`, a gzip body comes back as sent (its first bytes are
        /// gzip's), or the transport refuses with code `.invalidRequest` before sending.
        case bodiesAsSentWhenAsked
        /// A transport configured to send through a proxy sends through it: a request to the
        /// server reaches the proxy (``HTTPTransportConformance/proxiedRequests`` counts one more)
        /// and its response comes back. Needs a transport made with a proxy, and
        /// `proxiedRequests` set (``needsProxy``).
        case goesThroughItsProxy

        /// Whether the check needs a transport configured with a proxy, and
        /// ``HTTPTransportConformance/proxiedRequests``: run it on its own, with such a transport.
        public var needsProxy: Bool { self == .goesThroughItsProxy }

        /// Whether the check needs a route only the demo server has (`/barrier`,
        /// `/gzip/zeros`, `/large`); the others use only httpbin's routes.
        public var needsDemoServer: Bool {
            self == .cancellationThrowsCancellationError || self == .manyRequestsInFlightToOneHost
                || self == .timedSendThrowsTimeoutError || self == .decodedBodiesAreLimited
                || self == .bodiesStreamToASink
        }

        /// The check's name: `redirectsAreReturned`.
        public var description: String { rawValue }
    }

    /// The transport under test.
    public let transport: any HTTPTransport
    /// The server the checks send to: the demo server's `baseURL`, or an httpbin.
    public let server: URL
    /// How long one check may take (real time) before it fails as hung.
    public var timeout: Duration
    /// The requests ``Check/manyRequestsInFlightToOneHost`` holds in flight at once, at most the
    /// transport's `maximumConnectionsPerHost`.
    public var requestsInFlight: Int
    /// Where ``Check/connectionRefusedIsTransient`` sends: a port nothing listens on.
    public var refusingServer: URL
    /// For ``Check/goesThroughItsProxy``: how many requests (or `CONNECT` tunnels) the proxy the
    /// transport was configured with has received so far.
    public var proxiedRequests: (@Sendable () -> Int)?

    /// - Parameters:
    ///   - transport: The transport under test.
    ///   - server: The demo server's `baseURL`, or an httpbin's.
    ///   - timeout: The real-time guard of each check.
    public init(transport: some HTTPTransport, server: URL, timeout: Duration = .seconds(30)) {
        self.transport = transport
        self.server = server
        self.timeout = timeout
        self.requestsInFlight = 16
        self.refusingServer = URL(string: "http://127.0.0.1:1")!
    }

    /// Runs `check`.
    ///
    /// Cancellation: cancelling the calling task cancels the check's requests; it then throws
    /// `CancellationError`, or the failure it had found. When ``timeout`` passes, the check's
    /// requests are cancelled too: a transport that also ignores cancellation keeps the check
    /// waiting until it returns.
    ///
    /// - Throws: ``HTTPTransportConformanceFailure`` saying what was expected and what
    ///   happened, also when the check did not end within ``timeout``.
    public func run(_ check: Check) async throws {
        let conformance = self
        do {
            try await withTimeout(timeout) { try await conformance.perform(check) }
        } catch is TimeoutError {
            throw HTTPTransportConformanceFailure(
                check: check, expected: check.expectation,
                actual: "the check did not end within \(timeout): the transport hangs"
            )
        }
    }

    private func perform(_ check: Check) async throws {
        switch check {
        case .statusesAreReturned: try await checkStatuses()
        case .challengesReturnAtOnce: try await checkChallenges()
        case .redirectsAreReturned: try await checkRedirects()
        case .bodiesArriveByteForByte: try await checkBodies()
        case .getWithBody: try await checkGetWithBody()
        case .cancellationThrowsCancellationError: try await checkCancellation()
        case .progressIsReported: try await checkProgress()
        case .manyRequestsInFlightToOneHost: try await checkManyInFlight()
        case .nonASCIIHeaderValues: try await checkNonASCIIHeaders()
        case .connectionRefusedIsTransient: try await checkConnectionRefused()
        case .timedSendThrowsTimeoutError: try await checkTimedSend()
        case .compressedBodiesAreDecoded: try await checkDecoding()
        case .decodedBodiesAreLimited: try await checkDecodedLimit()
        case .bodiesStreamToASink: try await checkSink()
        case .bodiesAsSentWhenAsked: try await checkAsSent()
        case .goesThroughItsProxy: try await checkProxy()
        }
    }
}

/// A transport broke a rule of the contract: what the check expected and what happened.
public struct HTTPTransportConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The check that failed (its code).
    public var check: HTTPTransportConformance.Check
    /// What the contract requires.
    public var expected: String
    /// What the transport did.
    public var actual: String

    /// A failure of `check`: `expected` is what the contract requires, `actual` what happened.
    public init(check: HTTPTransportConformance.Check, expected: String, actual: String) {
        self.check = check
        self.expected = expected
        self.actual = actual
    }

    /// `check: expected …; got …`.
    public var description: String { "\(check): expected \(expected); got \(actual)" }
}

extension HTTPTransportConformance.Check {
    /// What the check expects, in words, for a failure that has nothing more precise.
    var expectation: String {
        switch self {
        case .statusesAreReturned: "404 and 500 returned as responses"
        case .challengesReturnAtOnce: "each 401 returned at once"
        case .redirectsAreReturned: "each 3xx returned as is, not followed"
        case .bodiesArriveByteForByte: "request bodies to arrive byte for byte"
        case .getWithBody: "a GET's body sent byte for byte, or refused with .bodyNotAllowed"
        case .cancellationThrowsCancellationError: "CancellationError when the task is cancelled"
        case .progressIsReported: "progress that never goes back and ends at the body's size"
        case .manyRequestsInFlightToOneHost: "the requests all in flight at once to one host"
        case .nonASCIIHeaderValues: "a non-ASCII header value as its UTF-8 bytes, or refused naming the header"
        case .connectionRefusedIsTransient: "HTTPTransportError with code connectionRefused, transient"
        case .timedSendThrowsTimeoutError:
            "TimeoutError with the timeout given, for a request still held at its deadline"
        case .compressedBodiesAreDecoded: "gzip and deflate bodies decoded"
        case .decodedBodiesAreLimited: "HTTPTransportError .responseTooLarge for a body that inflates past the limit"
        case .bodiesStreamToASink: "the body handed to the sink in parts, never held whole"
        case .bodiesAsSentWhenAsked: "a gzip body as sent, or .invalidRequest"
        case .goesThroughItsProxy: "the request through the proxy the transport was given"
        }
    }
}
