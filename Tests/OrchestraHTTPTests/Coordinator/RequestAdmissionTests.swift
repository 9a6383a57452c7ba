import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// The coordinator's admission rules, from `RequestAdmission`'s doc comment: at most
/// `totalLimit` in flight and at most its group's limit per host group; waiters in priority
/// order, then first come, first served; a full group never holds back another; a rise admits
/// at once, a fall lets requests in flight finish.
///
/// The fast path is checked on the machine alone. Waiters need continuations: each waits in
/// its own task through `suspendUntilAdmitted` (which only calls the machine's methods), and
/// the test calls `release` and `setLimits` itself and resumes whom they return.
@Suite("RequestAdmission", .timeLimit(.minutes(1)), .takesTurns)
struct RequestAdmissionTests {
    typealias Request = RequestAdmission.Request

    func request(_ host: String, priority: Int = 0) -> Request {
        Request(host: host, priority: priority)
    }

    func describe(_ path: AdmissionFastPath) -> String {
        switch path {
        case .admitted: "admitted"
        case .cancelled: "cancelled"
        case .mustWait: "wait"
        }
    }

    // MARK: The fast path, on the machine alone

    @Test func admitsWhileTheTotalAndTheHostHaveRoom() {
        var machine = RequestAdmission(totalLimit: 3, perHostLimit: 2)
        #expect(describe(machine.admitOrReserve(request("a"), isCancelled: false)) == "admitted")
        #expect(describe(machine.admitOrReserve(request("a"), isCancelled: false)) == "admitted")
        #expect(describe(machine.admitOrReserve(request("a"), isCancelled: false)) == "wait", "host a is full")
        #expect(
            describe(machine.admitOrReserve(request("b"), isCancelled: false)) == "admitted",
            "a full host does not block another")
        #expect(describe(machine.admitOrReserve(request("c"), isCancelled: false)) == "wait", "the total is full")
        #expect(machine.inFlight == 3 && machine.inFlight(to: "a") == 2 && machine.inFlight(to: "b") == 1)
        #expect(machine.peakInFlight == 3)
        #expect(machine.waitingCount == 0, "reserving an id queues nothing yet")
    }

    /// The last route is given again for the same scheme and authority, and read anew for
    /// another or once the group limits change.
    @Test func aRouteIsKeptForTheSameAuthorityUntilTheGroupsChange() {
        var machine = RequestAdmission(totalLimit: 4, perHostLimit: 2)
        var paceKeysAsked = 0
        func route(_ scheme: String, _ authority: String) -> RequestAdmission.Route {
            machine.route(scheme: scheme, authority: authority) { host, scheme in
                paceKeysAsked += 1
                return "\(scheme)|\(host)"
            }
        }
        let first = route("http", "API.test")
        #expect(first.group == "http://api.test:80" && first.paceKey == "http|api.test:80" && paceKeysAsked == 1)
        #expect(route("http", "API.test").group == first.group && paceKeysAsked == 1, "the same route, not read again")
        let other = route("https", "API.test")
        #expect(other.group == "https://api.test:443" && other.host.port == 443 && paceKeysAsked == 2)
        #expect(route("http", "user@api.test:80").group == first.group && paceKeysAsked == 3)
        // A pattern naming the host now groups its requests, the route just given included.
        _ = machine.setLimits(total: 4, perHost: 2, groups: [HTTPHostKey(pattern: "api.test")!: 1])
        let grouped = route("http", "user@api.test:80")
        #expect(grouped.group != first.group && grouped.host == first.host && paceKeysAsked == 4)
        #expect(machine.limit(of: grouped.group) == 1)
        #expect(route("http", "API.test").group == grouped.group)
    }

    @Test func aCancelledCallerIsRefusedAndTakesNothing() {
        var machine = RequestAdmission(totalLimit: 1, perHostLimit: 1)
        #expect(describe(machine.admitOrReserve(request("a"), isCancelled: true)) == "cancelled")
        #expect(machine.inFlight == 0)
        #expect(describe(machine.admitOrReserve(request("a"), isCancelled: false)) == "admitted")
    }

    @Test func reservedIDsAreDistinct() {
        var machine = RequestAdmission(totalLimit: 1, perHostLimit: 1)
        _ = machine.admitOrReserve(request("a"), isCancelled: false)
        var ids = Set<UInt64>()
        for _ in 0..<50 {
            guard case .mustWait(let id) = machine.admitOrReserve(request("a"), isCancelled: false) else {
                Issue.record("the machine is full: callers must wait")
                return
            }
            ids.insert(id)
        }
        #expect(ids.count == 50)
    }

    @Test func releasingGivesTheSlotBack() {
        var machine = RequestAdmission(totalLimit: 1, perHostLimit: 1)
        _ = machine.admitOrReserve(request("a"), isCancelled: false)
        #expect(machine.release(host: "a").isEmpty, "nobody waits")
        #expect(machine.inFlight == 0 && machine.inFlight(to: "a") == 0)
        #expect(describe(machine.admitOrReserve(request("b"), isCancelled: false)) == "admitted")
        #expect(machine.peakInFlight == 1)
    }

    @Test func aHostLimitPatternGroupsTheHostsItNamesAndReplacesThePerHostLimit() {
        let groups = HTTPHostKey.limits([("API.test", 5), ("cdn.test:8443", 1)])
        let machine = RequestAdmission(totalLimit: 10, perHostLimit: 2, groupLimits: groups)
        let byName = machine.group(scheme: "https", authority: "api.test:443")
        #expect(
            byName == machine.group(scheme: "http", authority: "api.test"),
            "the pattern names the host, any port or scheme")
        #expect(machine.limit(of: byName) == 5)
        let exact = machine.group(scheme: "https", authority: "cdn.test:8443")
        #expect(machine.limit(of: exact) == 1)
        let otherPort = machine.group(scheme: "https", authority: "cdn.test:443")
        #expect(otherPort == "https://cdn.test:443", "host:port names that port only")
        #expect(machine.limit(of: otherPort) == 2, "no pattern: the per-host limit")
    }

    // MARK: Waiters

    /// Starts a task waiting for admission with `request` and returns once it is queued;
    /// `admitted` records its name when it is let in.
    func waiter(
        _ name: String, _ request: Request, on state: Locked<RequestAdmission>, admitted: EventLog<String>
    ) async throws -> Task<Void, any Error> {
        let before = state.withLock { $0.waitingCount }
        let task = Task {
            try await state.suspendUntilAdmitted(request)
            admitted.append(name)
        }
        try await waitUntil("\(name) waits") { state.withLock { $0.waitingCount } == before + 1 }
        return task
    }

    /// A request to `host` ended: resumes the waiters the machine admits in its place.
    func release(_ host: String, on state: Locked<RequestAdmission>) {
        for continuation in state.withLock({ $0.release(host: host) }) { continuation.resume() }
    }

    @Test func waitersStartByPriorityThenInArrivalOrderAcrossHosts() async throws {
        let state = Locked(RequestAdmission(totalLimit: 1, perHostLimit: 5))
        let admitted = EventLog<String>()
        #expect(describe(state.withLock { $0.admitOrReserve(request("x"), isCancelled: false) }) == "admitted")
        let tasks = [
            try await waiter("low a", request("a", priority: 0), on: state, admitted: admitted),
            try await waiter("high b", request("b", priority: 5), on: state, admitted: admitted),
            try await waiter("low c", request("c", priority: 0), on: state, admitted: admitted),
            try await waiter("high a", request("a", priority: 5), on: state, admitted: admitted),
        ]
        var host = "x"
        for (round, expected) in ["high b", "high a", "low a", "low c"].enumerated() {
            release(host, on: state)
            try await waitUntil("\(expected) admitted") { admitted.count == round + 1 }
            #expect(admitted.events.last == expected)
            #expect(state.withLock { $0.inFlight } == 1)
            host = String(expected.last!)
        }
        for task in tasks { try await task.value }
    }

    @Test func aFullHostNeverHoldsBackAWaiterForAnotherHost() async throws {
        let state = Locked(RequestAdmission(totalLimit: 2, perHostLimit: 1))
        let admitted = EventLog<String>()
        _ = state.withLock { $0.admitOrReserve(request("a"), isCancelled: false) }
        _ = state.withLock { $0.admitOrReserve(request("b"), isCancelled: false) }
        let urgent = try await waiter("urgent a", request("a", priority: 10), on: state, admitted: admitted)
        let other = try await waiter("c", request("c"), on: state, admitted: admitted)
        release("b", on: state)
        try await waitUntil("c admitted") { admitted.count == 1 }
        #expect(admitted.events == ["c"], "a is still full: its higher-priority waiter cannot take b's slot")
        release("a", on: state)
        try await waitUntil("urgent a admitted") { admitted.count == 2 }
        try await urgent.value
        try await other.value
    }

    @Test func aCallerThatFindsRoomWhenItSuspendsIsAdmittedAtOnce() async throws {
        var machine = RequestAdmission(totalLimit: 1, perHostLimit: 1)
        _ = machine.admitOrReserve(request("a"), isCancelled: false)
        guard case .mustWait(let id) = machine.admitOrReserve(request("b"), isCancelled: false) else {
            Issue.record("the total is full: b must wait")
            return
        }
        _ = machine.release(host: "a")  // between the fast path and the suspension
        var action: AdmissionSuspendAction?
        try await withCheckedThrowingContinuation { (continuation: RequestAdmission.Continuation) in
            action = machine.suspend(id: id, request: request("b"), continuation: continuation, isCancelled: false)
            continuation.resume()  // admitted at once: the machine did not keep it
        }
        guard case .resumeAdmitted = action else {
            Issue.record("b should be admitted when it suspends, got \(String(describing: action))")
            return
        }
        #expect(machine.inFlight == 1 && machine.inFlight(to: "b") == 1)
        #expect(machine.waitingCount == 0)
    }

    @Test func aCancelledCallerThatMustWaitIsNotQueued() async throws {
        var machine = RequestAdmission(totalLimit: 1, perHostLimit: 1)
        _ = machine.admitOrReserve(request("a"), isCancelled: false)
        guard case .mustWait(let id) = machine.admitOrReserve(request("b"), isCancelled: false) else {
            Issue.record("the total is full: b must wait")
            return
        }
        var action: AdmissionSuspendAction?
        await #expect(throws: CancellationError.self) {
            try await withCheckedThrowingContinuation { (continuation: RequestAdmission.Continuation) in
                action = machine.suspend(id: id, request: request("b"), continuation: continuation, isCancelled: true)
                continuation.resume(throwing: CancellationError())
            }
        }
        guard case .resumeCancelled = action else {
            Issue.record("a cancelled caller should be refused, got \(String(describing: action))")
            return
        }
        #expect(machine.waitingCount == 0)
        #expect(machine.release(host: "a").isEmpty, "nobody was queued")
    }

    @Test func aCancelledWaiterLeavesTheQueueAndIsNeverAdmitted() async throws {
        let state = Locked(RequestAdmission(totalLimit: 1, perHostLimit: 1))
        let admitted = EventLog<String>()
        _ = state.withLock { $0.admitOrReserve(request("a"), isCancelled: false) }
        let leaving = try await waiter("leaving", request("a"), on: state, admitted: admitted)
        let staying = try await waiter("staying", request("a"), on: state, admitted: admitted)
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(state.withLock { $0.waitingCount } == 1)
        #expect(state.withLock { $0.cancel(id: 9_999) } == nil, "an unknown id removes nothing")
        release("a", on: state)
        try await staying.value
        #expect(admitted.events == ["staying"])
    }

    @Test func aRiseAdmitsWaitersAtOnceAndAFallLetsRequestsInFlightFinish() async throws {
        let state = Locked(RequestAdmission(totalLimit: 1, perHostLimit: 10))
        let admitted = EventLog<String>()
        _ = state.withLock { $0.admitOrReserve(request("a"), isCancelled: false) }
        var tasks: [Task<Void, any Error>] = []
        for index in 0..<4 { tasks.append(try await waiter("w\(index)", request("a"), on: state, admitted: admitted)) }

        for continuation in state.withLock({ $0.setLimits(total: 3, perHost: 10) }) { continuation.resume() }
        try await waitUntil("two admitted by the rise") { admitted.count == 2 }
        // The first two waiters, resumed together: their tasks log in either order.
        #expect(admitted.events.sorted() == ["w0", "w1"])
        #expect(state.withLock { $0.inFlight } == 3)

        // A fall to 1: the three in flight go on; nothing starts until one of them is left.
        #expect(state.withLock { $0.setLimits(total: 1, perHost: 10) }.isEmpty)
        #expect(state.withLock { $0.inFlight } == 3, "nothing in flight is interrupted")
        release("a", on: state)
        release("a", on: state)
        #expect(state.withLock { $0.waitingCount } == 2, "one in flight of a limit of one: still full")
        release("a", on: state)
        try await waitUntil("w2 admitted") { admitted.count == 3 }
        #expect(admitted.events.last == "w2")
        #expect(state.withLock { $0.inFlight } == 1)
        #expect(state.withLock { $0.waitingCount } == 1)

        // A per-host fall works the same way.
        for continuation in state.withLock({ $0.setLimits(total: 5, perHost: 1) }) { continuation.resume() }
        #expect(state.withLock { $0.waitingCount } == 1, "host a is at its new limit")
        release("a", on: state)
        try await waitUntil("w3 admitted") { admitted.count == 4 }
        for task in tasks { try await task.value }
    }
}
