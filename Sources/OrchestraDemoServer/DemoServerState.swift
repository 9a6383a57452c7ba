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
    }

    let counters = Locked(Counters())
    let gate = AsyncGate(isOpen: true)
    let shutdown = AsyncEvent()
    let configuration: DemoServer.Configuration

    init(configuration: DemoServer.Configuration) {
        self.configuration = configuration
    }

    func enter(path: String) {
        counters.withLock {
            $0.inFlight += 1
            $0.peakInFlight = max($0.peakInFlight, $0.inFlight)
            $0.requests += 1
            $0.arrivals[path, default: 0] += 1
        }
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
