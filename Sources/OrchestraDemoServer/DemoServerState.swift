import Orchestra

/// What the demo server counts and controls, shared by its handlers and its owner.
final class DemoServerState: Sendable {
    struct Counters: Sendable {
        var inFlight = 0
        var peakInFlight = 0
        var requests = 0
        var refreshCalls = 0
        var loginCalls = 0
        var arrivals: [String: Int] = [:]
        var flakyCalls: [String: Int] = [:]
        var tokenNumber = 0
        var validToken: String?
        /// Waiters for a number of arrivals at a path.
        var arrivalWaiters: [(path: String, count: Int, event: AsyncEvent)] = []
        /// Waiters for a number of requests in total.
        var requestWaiters: [(count: Int, event: AsyncEvent)] = []
    }

    let counters = Locked(Counters())
    /// The buckets of `/limited`.
    let rateBuckets = Locked(DemoRateBuckets())
    /// The jobs of `/jobs`.
    let jobs = Locked(DemoJobs())
    let gate = AsyncGate(isOpen: true)
    let shutdown = AsyncEvent()
    let configuration: DemoServer.Configuration

    init(configuration: DemoServer.Configuration) {
        self.configuration = configuration
    }

    func enter(path: String) {
        let reached = counters.withLock { counters -> [AsyncEvent] in
            counters.inFlight += 1
            counters.peakInFlight = max(counters.peakInFlight, counters.inFlight)
            counters.requests += 1
            counters.arrivals[path, default: 0] += 1
            return takeReachedWaiters(&counters)
        }
        for event in reached { event.signal() }
    }

    /// An event signalled once `count` requests for `path` have arrived.
    func arrivalEvent(path: String, count: Int) -> AsyncEvent {
        let event = AsyncEvent()
        let reached = counters.withLock { counters -> Bool in
            if counters.arrivals[path, default: 0] >= count { return true }
            counters.arrivalWaiters.append((path, count, event))
            return false
        }
        if reached { event.signal() }
        return event
    }

    /// An event signalled once `count` requests in total have arrived.
    func requestEvent(count: Int) -> AsyncEvent {
        let event = AsyncEvent()
        let reached = counters.withLock { counters -> Bool in
            if counters.requests >= count { return true }
            counters.requestWaiters.append((count, event))
            return false
        }
        if reached { event.signal() }
        return event
    }

    /// Waits until `count` requests for `path` have arrived, or the server stops.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled.
    func barrier(path: String, count: Int) async throws {
        let reached = arrivalEvent(path: path, count: count)
        try await untilShutdown { try await reached.wait() }
    }

    /// Waits `latency` (a route's simulated latency), or until the server stops: a graceful
    /// shutdown does not wait for a long latency to pass.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled.
    func delay(_ latency: Duration) async throws {
        guard latency > .zero else { return }
        try await untilShutdown { try await Task.sleep(for: latency) }
    }

    /// Runs `operation` until it ends or the server stops, whichever comes first.
    private func untilShutdown(_ operation: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(operation: operation)
            group.addTask { [shutdown] in try await shutdown.wait() }
            try await group.next()
            group.cancelAll()
        }
    }

    private func takeReachedWaiters(_ counters: inout Counters) -> [AsyncEvent] {
        var reached: [AsyncEvent] = []
        counters.arrivalWaiters.removeAll { waiter in
            guard counters.arrivals[waiter.path, default: 0] >= waiter.count else { return false }
            reached.append(waiter.event)
            return true
        }
        counters.requestWaiters.removeAll { waiter in
            guard counters.requests >= waiter.count else { return false }
            reached.append(waiter.event)
            return true
        }
        return reached
    }

    func leave() {
        counters.withLock { $0.inFlight -= 1 }
    }

    /// Issues the next access token; unless configured otherwise, it becomes the only valid one.
    func issueToken(refresh: Bool) -> String {
        counters.withLock { state in
            if refresh { state.refreshCalls += 1 } else { state.loginCalls += 1 }
            state.tokenNumber += 1
            let token = "token-\(state.tokenNumber)"
            if !(refresh && configuration.refreshIssuesInvalidTokens) {
                state.validToken = token
            }
            return token
        }
    }

    func isValid(_ token: String?) -> Bool {
        counters.withLock { token != nil && $0.validToken == token }
    }
}
