#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// Something went wrong in code Orchestra coordinates that is not an error of the awaited
/// operation itself: a completion handler called twice, or called after its caller gave up.
///
/// Diagnostics never change what the awaiting code sees; they exist so the bug behind them can
/// be found. They go to a ``DiagnosticsHandler``.
public struct OrchestraDiagnostic: Sendable, CustomStringConvertible {
    /// What kind of misuse was seen.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// A completion was called again after the first call; the later call was ignored.
        public static let doubleCompletion = Kind("double completion")
        /// A completion was called after the awaiting task was cancelled; it was ignored.
        public static let lateCompletion = Kind("late completion")
        /// An operation was finished again after it had finished; the later call was ignored.
        public static let doubleFinish = Kind("double finish")
        /// An operation was started again after it had started; the later call was ignored.
        public static let doubleStart = Kind("double start")
    }

    /// What kind of misuse this is.
    public var kind: Kind
    /// A sentence naming what happened and what was ignored.
    public var message: String
    /// Where the coordinating call was made (`#fileID:#line` of the caller).
    public var location: String
    /// Whether this is the normal echo of something Orchestra asked for, not a bug: for
    /// example a legacy API that, once asked to cancel, still calls its completion with a
    /// "cancelled" error (URLSession does). ``DiagnosticsHandler/standardError`` skips these.
    public var isExpected: Bool

    /// A diagnostic of `kind` about the code at `location`; `isExpected` marks the normal echo
    /// of something Orchestra asked for (see ``isExpected``).
    public init(kind: Kind, message: String, location: String, isExpected: Bool = false) {
        self.kind = kind
        self.message = message
        self.location = location
        self.isExpected = isExpected
    }

    /// `location: kind: message`.
    public var description: String { "\(location): \(kind): \(message)" }
}

/// Where ``OrchestraDiagnostic``s go.
///
/// Give one per call (for example `withCallback(diagnostics:)`), per instance, or for a whole
/// task tree with `DiagnosticsHandler.$current`:
///
/// ```swift
/// try await DiagnosticsHandler.$current.withValue(.init { logger.warning("\($0)") }) {
///     try await syncEverything()
/// }
/// ```
///
/// The handler in effect is captured when the coordinating call starts, so a completion that
/// fires later on another thread still reports to it. Handlers may be called on any thread.
public struct DiagnosticsHandler: Sendable {
    private let handle: @Sendable (OrchestraDiagnostic) -> Void

    /// Diagnostics delivered to `handle`, on the task that produced them; keep it short.
    public init(_ handle: @escaping @Sendable (OrchestraDiagnostic) -> Void) {
        self.handle = handle
    }

    /// Reports a diagnostic.
    public func report(_ diagnostic: OrchestraDiagnostic) {
        handle(diagnostic)
    }

    /// Writes each unexpected diagnostic as one line to standard error (the default);
    /// diagnostics marked ``OrchestraDiagnostic/isExpected`` are dropped.
    public static let standardError = DiagnosticsHandler { diagnostic in
        guard !diagnostic.isExpected else { return }
        let line = Array("[Orchestra] \(diagnostic)\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// Drops diagnostics.
    public static let ignore = DiagnosticsHandler { _ in }

    /// The handler for the current task and its child tasks; ``standardError`` unless bound
    /// with `DiagnosticsHandler.$current.withValue(_:operation:)`.
    @TaskLocal public static var current: DiagnosticsHandler = .standardError
}
