import Logging
import Orchestra
import PostgresNIO

/// A try of an operation given up because its connection closed while it ran (the server
/// restarted, or ended its backend): tried again, as in any outage.
struct ConnectionClosedMidOperation: Error, CustomStringConvertible {
    var description: String { "the connection closed during an operation" }
}

/// What gives a try up before its timer does: its connection closed under it.
///
/// PostgresNIO was seen to leave a query on a connection that the server closed (an immediate
/// restart) unanswered: the try then waited out its whole time limit (10 s) before the next
/// one, and leases ran out meanwhile (a job that runs at most once then ended "may have been
/// sent", though its worker lived).
final class TryAbandonment: Sendable {
    /// The connection the try runs on; whether it was abandoned; what gives it up once it waits.
    private let state = Locked<(connection: PostgresConnection.ID?, abandoned: Bool, giveUp: (@Sendable () -> Void)?)>(
        (nil, false, nil))

    /// Gives the try up, now if it waits, else as soon as it does.
    func abandon() {
        state.withLock { state in
            state.abandoned = true
            return state.giveUp
        }?()
    }

    /// What gives the try up (`PostgresJobStore.abandoning`).
    ///
    /// - Returns: Whether it was abandoned already (the caller gives it up at once).
    func install(_ giveUp: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            state.giveUp = giveUp
            return state.abandoned
        }
    }

    /// The connection the try runs on, set once it has one.
    var connection: PostgresConnection.ID? {
        get { state.withLock { $0.connection } }
        set { state.withLock { $0.connection = newValue } }
    }
}

/// A connection a store uses, from its first operation until it closes.
struct ConnectionInUse: Sendable {
    /// The tries running on it now: given up at once if it closes.
    var tries: [ObjectIdentifier: TryAbandonment] = [:]
    /// The operations (transactions and reads) it ran since it last dropped its plans
    /// (`PostgresJobStore.preparing(_:)`).
    var sinceReplanning = 0
}

extension PostgresJobStore {
    /// Has `current` given up at once if `connection` closes before the try ends
    /// (``stopWatching(_:)``); and, the first time the store uses `connection`, puts
    /// ``RequestedReadsOnly`` on it and has its close give up the tries on it.
    func watch(_ connection: PostgresConnection, during current: Try) async {
        let (id, abandonment) = (connection.id, current.abandonment)
        abandonment.connection = id
        let isNew = connections.withLock { connections in
            let isNew = connections[id] == nil
            connections[id, default: ConnectionInUse()].tries[ObjectIdentifier(abandonment)] = abandonment
            return isNew
        }
        guard isNew else { return }
        await Self.guardReads(of: connection, logger: logger)
        // Once per connection (a callback per try would pile up on a connection that lives for
        // hours): at its close, its entry goes, and the tries on it are given up. One that
        // closed already calls it at once.
        let connections = self.connections
        connection.closeFuture.whenComplete { _ in
            guard let closed = connections.withLock({ $0.removeValue(forKey: id) }) else { return }
            for abandonment in closed.tries.values { abandonment.abandon() }
        }
    }

    /// Ends ``watch(_:during:)`` of `current`, once its try has ended.
    func stopWatching(_ current: Try) {
        let abandonment = current.abandonment
        guard let id = abandonment.connection else { return }
        connections.withLock { _ = $0[id]?.tries.removeValue(forKey: ObjectIdentifier(abandonment)) }
    }
}
