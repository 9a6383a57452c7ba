import Dispatch
import Orchestra

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Ctrl-C (SIGINT) and SIGTERM for a command that reports what it did before it exits.
///
/// The first signal cancels the work in ``cancellingOnSignal(_:)`` — which then ends the way a
/// cancelled task ends, so the command can still print its report — and is remembered in
/// ``received``, so the command exits with its status (130 for SIGINT, 143 for SIGTERM). A
/// second signal exits at once, with that status and no report: the way out of a run that does
/// not end.
///
/// Each signal is acknowledged on standard error as it arrives (`orchestra run: SIGINT:
/// cancelling the run; press Ctrl-C again to exit at once`); on a terminal the line is cleared
/// first, so the acknowledgement replaces a progress bar and the `^C` the terminal echoed.
///
/// ```swift
/// let signals = TerminationSignals.install(command: "orchestra run", acknowledging: "cancelling the run")
/// let report = try await signals.cancellingOnSignal { await runner.run() }
/// print(report)
/// if let signal = signals.received { throw ExitCode(signal.exitStatus) }
/// ```
///
/// Install it once, early in the command: the handlers stay for the rest of the process. A
/// disposition the process inherited (a background job of a non-interactive shell starts with
/// SIGINT ignored) does not matter: the signals are set to be ignored by default and delivered
/// to dispatch sources instead.
final class TerminationSignals: Sendable {
    /// A signal that asks the command to stop.
    enum Signal: Int32, Sendable {
        // The same numbers on Linux and on Apple platforms.
        case interrupt = 2  // SIGINT
        case terminate = 15  // SIGTERM

        var number: Int32 { rawValue }

        /// `SIGINT`, `SIGTERM`.
        var name: String { self == .interrupt ? "SIGINT" : "SIGTERM" }

        /// 128 + the signal's number, as a shell reports a process a signal stopped: 130, 143.
        var exitStatus: Int32 { 128 + rawValue }
    }

    private struct State {
        /// The first signal, once one arrived.
        var received: Signal?
        /// The runs of ``cancellingOnSignal(_:)`` under way, each told of the first signal.
        var watchers: [Int: AsyncStream<Void>.Continuation] = [:]
        var nextWatcher = 0
    }

    private let state = Locked(State())
    private let command: String
    private let acknowledgement: String
    private let onFirstSignal: @Sendable (Signal) -> Void

    /// Routes SIGINT and SIGTERM to the returned object for the rest of the process.
    ///
    /// - Parameters:
    ///   - command: How the acknowledgements name the command: `orchestra run`.
    ///   - acknowledgement: What the first signal does, in its acknowledgement:
    ///     `cancelling the run`.
    ///   - onFirstSignal: Called once, on a dispatch queue, when the first signal arrives,
    ///     before it is acknowledged and the work cancelled (to stop redrawing a progress bar).
    static func install(
        command: String, acknowledging acknowledgement: String,
        onFirstSignal: @escaping @Sendable (Signal) -> Void = { _ in }
    ) -> TerminationSignals {
        TerminationSignals(command: command, acknowledgement: acknowledgement, onFirstSignal: onFirstSignal)
    }

    private init(command: String, acknowledgement: String, onFirstSignal: @escaping @Sendable (Signal) -> Void) {
        self.command = command
        self.acknowledgement = acknowledgement
        self.onFirstSignal = onFirstSignal
        let queue = DispatchQueue(label: "orchestra.termination-signals")
        for kind in [Signal.interrupt, .terminate] {
            // The default action would end the process before the source sees the signal (and
            // before libdispatch, on Linux, installs its own handler for it).
            _ = signal(kind.number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: kind.number, queue: queue)
            // The handler holds its source and this object: neither is ever released, so the
            // signal is handled for the rest of the process.
            source.setEventHandler {
                // Signals that arrive before the handler runs are merged: `data` counts them.
                self.handle(kind, count: Int(source.data))
            }
            source.resume()
        }
    }

    /// The first signal that arrived, if one did.
    var received: Signal? {
        state.withLock { $0.received }
    }

    /// Runs `body`, cancelling it when the first signal arrives (or if one already has), and
    /// returns what it returns: work that reports on cancellation still reports.
    ///
    /// Cancelling the calling task cancels `body` too.
    func cancellingOnSignal<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let (signalled, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            if state.received != nil { continuation.yield() }
            defer { state.nextWatcher += 1 }
            state.watchers[state.nextWatcher] = continuation
            return state.nextWatcher
        }
        defer {
            state.withLock { _ = $0.watchers.removeValue(forKey: id) }
            continuation.finish()
        }
        return try await withThrowingTaskGroup(of: SignalledOr<T>.self) { group in
            group.addTask { .finished(try await body()) }
            group.addTask {
                // Ends when a signal arrives, or when the group is cancelled once `body` ended.
                for await _ in signalled { break }
                return .signalled
            }
            while let outcome = try await group.next() {
                switch outcome {
                case .finished(let value):
                    group.cancelAll()
                    return value
                case .signalled:
                    group.cancelAll()  // `body` ends as cancelled work ends, and is awaited
                }
            }
            preconditionFailure("TerminationSignals: the body's task ended without a result")
        }
    }

    /// `count` deliveries of `signal` since the handler last ran.
    private func handle(_ signal: Signal, count: Int) {
        let (isFirst, watchers) = state.withLock { state -> (Bool, [AsyncStream<Void>.Continuation]) in
            guard state.received == nil else { return (false, []) }
            state.received = signal
            return (true, Array(state.watchers.values))
        }
        if !isFirst || count > 1 {
            exitNow(signal)
        }
        onFirstSignal(signal)
        let again = signal == .interrupt ? "press Ctrl-C again" : "signal again"
        acknowledge("\(command): \(signal.name): \(acknowledgement); \(again) to exit at once, without a report")
        for watcher in watchers { watcher.yield() }
    }

    /// The second signal: no report, no clean-up, the signal's exit status.
    private func exitNow(_ signal: Signal) -> Never {
        acknowledge("\(command): \(signal.name) again: exiting now, without a report")
        _exit(signal.exitStatus)
    }

    /// A line on standard error; on a terminal, the line under the cursor is cleared first.
    private func acknowledge(_ line: String) {
        let text = (isatty(2) == 1 ? Console.clearLine : "") + line + "\n"
        text.utf8CString.withUnsafeBufferPointer { bytes in
            _ = write(2, bytes.baseAddress, bytes.count - 1)
        }
    }
}

/// How a child of ``TerminationSignals/cancellingOnSignal(_:)`` ended.
private enum SignalledOr<Value: Sendable>: Sendable {
    case finished(Value)
    case signalled
}
