import Orchestra
import OrchestraHTTP

/// What a workflow's `limit:` and `hosts:` mean to each layer that runs it: the one place
/// where `limit` becomes the transport's connections, the coordinator's limits, the graph's and
/// a `for_each`'s windows, and a durable run's limits.
///
/// ```swift
/// let limits = WorkflowLimits(limit: 8, hosts: [HostLimit(host: "api.test", limit: 2)])
/// limits.connectionsPerHost   // 64: the transport never queues what the coordinator let through
/// limits.forEachWindow        // 32: elements started at once
/// limits.resource(scheme: "https", authority: "API.test:443")   // "host:api.test"
/// ```
///
/// | Number | From `limit` L | Why |
/// | --- | --- | --- |
/// | ``connectionsPerHost`` | L, at least 64 | the client never queues a request the coordinator admitted |
/// | ``coordinatorConfiguration(authentication:)`` | L in flight, L per host, `hosts:` per key | the workflow's limits |
/// | ``graphWindow`` | max(4 L, L + 16); unbounded with `hosts:` | steps started at once (a waiting step is a task) |
/// | ``forEachWindow`` | max(4 L, L + 16) | elements started at once: memory flat in the list's length |
/// | ``durableLimit``, ``resourceLimits`` | L and `hosts:`, at most 2³¹ − 1 | a durable run's limits in the store |
/// | ``resourceRates`` | `hosts:` rates, `burst:` | each host's rate, held in the store's claims across workers |
///
/// *Why the windows exceed L:* a started step or element may wait for a backoff, a token or a
/// host slot, holding no request slot; four times L keeps the limit busy meanwhile. With
/// `hosts:` limits the graph starts every ready step (a step waiting for a busy host must not
/// hold a place another host's step could use; a file's steps are bounded), but a `for_each`
/// keeps its window (its list is not). Arithmetic saturates: `limit: 9223372036854775807` means
/// no limit, never a trap or a wrapped window.
package struct WorkflowLimits: Sendable, Equatable {
    /// `limit:`: requests in flight at once; at least 1.
    package let limit: Int
    /// `hosts:` by the host they name (``HTTPHostKey``); two entries naming one host keep the
    /// lower limit.
    package let hosts: [HTTPHostKey: Int]
    /// The rates of `hosts:` by the host they name; two entries naming one host keep the
    /// slower rate.
    package let hostRates: [HTTPHostKey: Rate]
    /// `rate:`: requests started per interval over all hosts.
    package let rate: Rate?
    /// `burst:`: starts at once after a quiet time, by each rate; at least 1.
    package let burst: Int

    /// The fewest connections per host a transport is given.
    package static let minimumConnectionsPerHost = 64
    /// The largest limit a durable store keeps (its columns are 32-bit); a larger one is no
    /// limit in practice.
    package static let maximumDurableLimit = Int(Int32.max)

    /// The limits of a workflow whose `limit:` is `limit` and whose `hosts:` are `hosts` (an
    /// entry that is not a host pattern, which the parser reports, is left out).
    package init(limit: Int, hosts: [HostLimit] = [], rate: Rate? = nil, burst: Int = 1) {
        precondition(limit >= 1, "WorkflowLimits: limit must be at least 1, got \(limit)")
        precondition(burst >= 1, "WorkflowLimits: burst must be at least 1, got \(burst)")
        self.limit = limit
        self.hosts = HTTPHostKey.limits(hosts.compactMap { entry in entry.limit.map { (entry.host, $0) } })
        var rates: [HTTPHostKey: Rate] = [:]
        for entry in hosts {
            guard let rate = entry.rate, let key = HTTPHostKey(pattern: entry.host) else { continue }
            rates[key] = Rate.slower(rates[key], rate)
        }
        self.hostRates = rates
        self.rate = rate
        self.burst = burst
    }

    /// Connections the transport may open to one host: `limit`, and at least 64.
    package var connectionsPerHost: Int { max(Self.minimumConnectionsPerHost, limit) }

    /// The coordinator every request of the run goes through: at most `limit` in flight, and
    /// at most `limit` to one host unless `hosts:` names it; no timeout, retry or redirect of
    /// its own (those are per step).
    package func coordinatorConfiguration(
        authentication: HTTPCoordinator.Authentication?,
        onRateEvent: (@Sendable (HTTPRateEvent) -> Void)? = nil
    ) -> HTTPCoordinator.Configuration {
        HTTPCoordinator.Configuration(
            maxConcurrentRequests: limit, maxConcurrentRequestsPerHost: limit,
            hostLimits: Dictionary(uniqueKeysWithValues: hosts.map { ($0.key.description, $0.value) }),
            requestTimeout: nil, retry: .never, redirects: .never, authentication: authentication,
            rate: rate, hostRates: Dictionary(uniqueKeysWithValues: hostRates.map { ($0.key.description, $0.value) }),
            rateBurst: burst, onRateEvent: onRateEvent)
    }

    /// The most steps started at once (running, or waiting for a request slot, a backoff or a
    /// token): ``window(for:)`` without `hosts:` limits, every ready step with them. Other
    /// ready steps wait, unstarted, in the order the graph schedules them.
    package var graphWindow: Int { hosts.isEmpty ? Self.window(for: limit) : .max }

    /// The most elements of a `for_each` step started at once: ``window(for:)``.
    package var forEachWindow: Int { Self.window(for: limit) }

    /// A durable run's limit of jobs running at once: `limit`, at most 2³¹ − 1.
    package var durableLimit: Int { min(limit, Self.maximumDurableLimit) }

    /// A durable run's resources, one per `hosts:` entry (``resource(scheme:authority:)``
    /// names them), each with its limit (at most 2³¹ − 1).
    package var resourceLimits: [String: Int] {
        Dictionary(uniqueKeysWithValues: hosts.map { (Self.resource($0.key), min($0.value, Self.maximumDurableLimit)) })
    }

    /// The durable resource a request to `scheme://authority` uses: that of the `hosts:` entry
    /// naming its `host:port`, else its host, as the coordinator chooses (a limit's entry
    /// first, then a rate's); `nil` if none does.
    package func resource(scheme: String?, authority: String) -> String? {
        resource(of: HTTPHostKey(scheme: scheme, authority: authority))
    }

    /// The durable resource of requests to `key`, as ``resource(scheme:authority:)``.
    package func resource(of key: HTTPHostKey) -> String? {
        (key.entry(in: hosts)?.key ?? key.entry(in: hostRates)?.key).map(Self.resource)
    }

    /// Four times `limit`, and at least `limit` + 16, saturating.
    package static func window(for limit: Int) -> Int {
        limit > (Int.max - 16) / 4 ? Int.max : max(limit * 4, limit + 16)
    }

    static func resource(_ key: HTTPHostKey) -> String {
        "host:\(key)"
    }
}

extension Workflow {
    /// ``limit`` and ``hostLimits`` as each layer of a run uses them.
    package var limits: WorkflowLimits { WorkflowLimits(limit: limit, hosts: hostLimits, rate: rate, burst: burst) }
}
