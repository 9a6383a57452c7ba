import Orchestra

/// Asks a worker loop (``DurableQueue/work(limit:until:gracePeriod:)``) to stop gracefully:
/// claim nothing more, let the jobs it runs finish within a grace period, and give back the
/// leases of those that do not.
///
/// ```swift
/// let stop = DurableStopSignal()
/// let worker = Task { try await queue.work(limit: 8, until: stop, gracePeriod: .seconds(30)) }
/// // on SIGTERM:
/// stop.request()
/// try await worker.value
/// ```
///
/// One signal may stop several loops; a request made before a loop starts stops it at once.
public final class DurableStopSignal: Sendable {
    private struct State: Sendable {
        var requested = false
        var nextID = 0
        var observers: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Locked(State())

    /// A signal not yet requested.
    public init() {}

    /// Whether the stop was requested.
    public var isRequested: Bool { state.withLock { $0.requested } }

    /// Requests the stop. Requesting it again does nothing.
    public func request() {
        let observers: [@Sendable () -> Void] = state.withLock { state in
            guard !state.requested else { return [] }
            state.requested = true
            defer { state.observers = [:] }
            return Array(state.observers.values)
        }
        for observer in observers { observer() }
    }

    /// Calls `observer` once, when the stop is requested (at once if it was); returns what
    /// ``removeObserver(_:)`` takes.
    func observe(_ observer: @escaping @Sendable () -> Void) -> Int? {
        let id: Int? = state.withLock { state in
            guard !state.requested else { return nil }
            defer { state.nextID += 1 }
            state.observers[state.nextID] = observer
            return state.nextID
        }
        if id == nil { observer() }
        return id
    }

    func removeObserver(_ id: Int?) {
        guard let id else { return }
        state.withLock { _ = $0.observers.removeValue(forKey: id) }
    }
}
