import Orchestra

/// What a ``PostgresJobStore`` says of its server as it works, for a process to tell its
/// operator: the server stopped answering (down, restarting, out of connections) and the store
/// keeps trying, or it answers again. Each outage is said once, whatever the number of
/// transactions that met it.
public enum PostgresConnectivity: Sendable, Equatable {
    /// The server cannot be reached, or takes no more connections, for the reason given; the
    /// store keeps trying (at start, for as long as it was told to wait; while working, for
    /// up to its outage tolerance).
    case unreachable(reason: String)
    /// The server answers again, `after` the outage began.
    case reachable(after: Duration)
    /// The server had fewer connections free than the store may open (`asked`) when it
    /// opened: it opens at most `using` (at least 2), so as not to take connections other
    /// processes need, nor wait for ones the server would refuse.
    case fewerConnections(using: Int, asked: Int)
}

/// Says each outage once: its first failure, and the first answer after it.
final class ConnectivityWatch: Sendable {
    private let since = Locked<ContinuousClock.Instant?>(nil)
    private let note: (@Sendable (PostgresConnectivity) -> Void)?

    init(_ note: (@Sendable (PostgresConnectivity) -> Void)?) {
        self.note = note
    }

    /// Tells `event` as it is.
    func tell(_ event: PostgresConnectivity) {
        note?(event)
    }

    /// A try failed because the server could not be reached (`reason`).
    func failed(_ reason: String) {
        guard let note else { return }
        let first = since.withLock { since in
            guard since == nil else { return false }
            since = .now
            return true
        }
        if first { note(.unreachable(reason: reason)) }
    }

    /// A try got an answer.
    func answered() {
        guard let note else { return }
        let began = since.withLock { since in
            defer { since = nil }
            return since
        }
        if let began { note(.reachable(after: began.duration(to: .now))) }
    }
}
