/// The pure state behind ``AsyncGate`` and ``AsyncEvent``: open or closed, and the tasks
/// waiting for it to open.
struct GateStateMachine: AdmissionStateMachine, Sendable {
    private(set) var isOpen: Bool
    private var waiters = WaiterQueue<Continuation>()

    init(isOpen: Bool) {
        self.isOpen = isOpen
    }

    var waiterCount: Int { waiters.count }

    /// An open gate lets everyone through, even a cancelled task: there is nothing to wait for.
    mutating func admitOrReserve(_: Void = (), isCancelled: Bool) -> AdmissionFastPath {
        if isOpen { return .admitted }
        if isCancelled { return .cancelled }
        return .mustWait(id: waiters.makeID())
    }

    mutating func suspend(
        id: UInt64, request _: Void = (), continuation: Continuation, isCancelled: Bool
    ) -> AdmissionSuspendAction {
        if isOpen { return .resumeAdmitted }
        if isCancelled { return .resumeCancelled }
        waiters.append(continuation, id: id)
        return .suspended
    }

    mutating func cancel(id: UInt64) -> Continuation? {
        waiters.remove(id: id)
    }

    /// Opens the gate and returns every waiter, to be resumed outside the lock.
    mutating func open() -> [Continuation] {
        isOpen = true
        return waiters.removeAll()
    }

    mutating func close() {
        isOpen = false
    }
}
