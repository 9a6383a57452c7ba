import DequeModule
import Orchestra

/// Who may send now, as a pure state machine: at most `totalLimit` requests in flight and at
/// most the limit of its host group to any one group (a group is a host, or every host a
/// host-limit pattern matches; `perHostLimit` unless `groupLimits` says otherwise); waiting
/// requests go in priority order (then first come, first served), and a request whose group is
/// full never holds back one to another group.
///
/// Complexity: admitting or releasing is O(hosts with waiters × priority levels), both small.
struct RequestAdmission: AdmissionStateMachine {
    struct Request: Sendable {
        /// The host group: `scheme://authority`, or the key of the host-limit pattern that
        /// matched it.
        var host: String
        var priority: Int
    }

    private struct Waiter {
        var id: UInt64
        var continuation: Continuation
    }

    private(set) var totalLimit: Int
    private(set) var perHostLimit: Int
    /// Limits of particular groups (host-limit patterns), replacing `perHostLimit` for them.
    private(set) var groupLimits: [HTTPHostKey: Int] {
        didSet {
            limitByGroup = Self.limitByGroup(groupLimits)
            lastRoute = nil
        }
    }
    /// The route of the last request, given again to the next one to the same scheme and
    /// authority (most runs send to one host or a few): reading the authority, lowercasing
    /// its host and writing the keys cost 2 % of a 10,000-request run's CPU when done for
    /// each request. Forgotten when the group limits change.
    private var lastRoute: Route?
    /// ``groupLimits`` by group key, read on every admission.
    private var limitByGroup: [String: Int]
    private(set) var inFlight = 0
    private var inFlightByHost: [String: Int] = [:]
    /// Per host, per priority, the waiters in arrival order.
    private var waiting: [String: [Int: Deque<Waiter>]] = [:]
    /// Where each waiter is, to remove it on cancellation.
    private var location: [UInt64: Request] = [:]
    private var nextID: UInt64 = 0
    private(set) var peakInFlight = 0

    init(totalLimit: Int, perHostLimit: Int, groupLimits: [HTTPHostKey: Int] = [:]) {
        self.totalLimit = totalLimit
        self.perHostLimit = perHostLimit
        self.groupLimits = groupLimits
        self.limitByGroup = Self.limitByGroup(groupLimits)
    }

    var waitingCount: Int { location.count }

    func inFlight(to host: String) -> Int { inFlightByHost[host, default: 0] }

    /// The group of the requests a host-limit pattern matches.
    private static func groupKey(of key: HTTPHostKey) -> String {
        "=" + key.description
    }

    /// The group of a request to `scheme://authority`: the host-limit pattern naming its
    /// `host:port`, else the one naming its host, else its own host and port
    /// (``HTTPHostKey/init(scheme:authority:)``: `https://HOST` and `https://host:443` are one).
    func group(scheme: String, authority: String) -> String {
        group(of: HTTPHostKey(scheme: scheme, authority: authority), scheme: scheme)
    }

    /// Where a request to `scheme://authority` goes: its host's key, its group (the key of its
    /// slots) and its pace key (`paceKey` of its host and scheme, asked only for a route not
    /// already known).
    struct Route {
        let scheme: String
        let authority: String
        let host: HTTPHostKey
        let group: String
        let paceKey: String
    }

    /// The route of a request to `scheme://authority` (see ``Route``).
    mutating func route(
        scheme: String, authority: String, paceKey: (HTTPHostKey, String) -> String
    ) -> Route {
        if let last = lastRoute, last.scheme == scheme, last.authority == authority { return last }
        let host = HTTPHostKey(scheme: scheme, authority: authority)
        let route = Route(
            scheme: scheme, authority: authority, host: host, group: group(of: host, scheme: scheme),
            paceKey: paceKey(host, scheme))
        lastRoute = route
        return route
    }

    /// The group of a request to `key` over `scheme`, as ``group(scheme:authority:)``.
    func group(of key: HTTPHostKey, scheme: String) -> String {
        if !groupLimits.isEmpty, let entry = key.entry(in: groupLimits) { return Self.groupKey(of: entry.key) }
        return "\(scheme.lowercased())://\(key)"
    }

    func limit(of host: String) -> Int {
        limitByGroup[host] ?? perHostLimit
    }

    private static func limitByGroup(_ limits: [HTTPHostKey: Int]) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: limits.map { (groupKey(of: $0.key), $0.value) })
    }

    private func hasRoom(for host: String) -> Bool {
        inFlight < totalLimit && inFlightByHost[host, default: 0] < limit(of: host)
    }

    private mutating func take(_ host: String) {
        inFlight += 1
        inFlightByHost[host, default: 0] += 1
        peakInFlight = max(peakInFlight, inFlight)
    }

    mutating func admitOrReserve(_ request: Request, isCancelled: Bool) -> AdmissionFastPath {
        if isCancelled { return .cancelled }
        // Requests already waiting for this host (of any priority) go first.
        if hasRoom(for: request.host), waiting[request.host] == nil {
            take(request.host)
            return .admitted
        }
        nextID &+= 1
        return .mustWait(id: nextID)
    }

    mutating func suspend(
        id: UInt64, request: Request, continuation: Continuation, isCancelled: Bool
    ) -> AdmissionSuspendAction {
        if hasRoom(for: request.host), waiting[request.host] == nil {
            take(request.host)
            return .resumeAdmitted
        }
        if isCancelled { return .resumeCancelled }
        waiting[request.host, default: [:]][request.priority, default: []].append(
            Waiter(id: id, continuation: continuation))
        location[id] = request
        return .suspended
    }

    mutating func cancel(id: UInt64) -> Continuation? {
        guard let request = location.removeValue(forKey: id),
            let index = waiting[request.host]?[request.priority]?.firstIndex(where: { $0.id == id })
        else { return nil }
        let waiter = waiting[request.host]![request.priority]!.remove(at: index)
        prune(request)
        return waiter.continuation
    }

    /// A request to `host` ended; returns the waiters admitted in its place.
    mutating func release(host: String) -> [Continuation] {
        inFlight -= 1
        let remaining = inFlightByHost[host, default: 1] - 1
        inFlightByHost[host] = remaining == 0 ? nil : remaining
        return admitWaiting()
    }

    /// New limits; a rise admits waiters at once, a fall lets requests in flight finish.
    mutating func setLimits(total: Int, perHost: Int, groups: [HTTPHostKey: Int]? = nil) -> [Continuation] {
        totalLimit = total
        perHostLimit = perHost
        if let groups { groupLimits = groups }
        return admitWaiting()
    }

    /// Admits, while there is room, the best waiter among the hosts that have room.
    private mutating func admitWaiting() -> [Continuation] {
        var admitted: [Continuation] = []
        while inFlight < totalLimit {
            // Highest priority first; among equals, the one that has waited longest (ids grow).
            var best: (request: Request, id: UInt64)?
            for (host, levels) in waiting where inFlightByHost[host, default: 0] < limit(of: host) {
                let top = levels.keys.max()!
                let first = levels[top]!.first!.id
                if let current = best,
                    current.request.priority > top || (current.request.priority == top && current.id < first)
                {
                    continue
                }
                best = (Request(host: host, priority: top), first)
            }
            guard let chosen = best?.request else { break }
            let waiter = waiting[chosen.host]![chosen.priority]!.removeFirst()
            location[waiter.id] = nil
            prune(chosen)
            take(chosen.host)
            admitted.append(waiter.continuation)
        }
        return admitted
    }

    private mutating func prune(_ request: Request) {
        if waiting[request.host]?[request.priority]?.isEmpty == true {
            waiting[request.host]![request.priority] = nil
        }
        if waiting[request.host]?.isEmpty == true {
            waiting[request.host] = nil
        }
    }
}
