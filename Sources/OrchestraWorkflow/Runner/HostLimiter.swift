import Orchestra

/// The workflow's `limit` and its `hosts:` limits: one semaphore for all requests and one per
/// host entry, taken around each attempt (a retry's backoff, a wait for a token and a wait for
/// a host slot hold no slot of the total, so a full host never holds back the other hosts).
final class HostLimiter: Sendable {
    private let total: AsyncSemaphore
    private let entries: [(limit: HostLimit, semaphore: AsyncSemaphore)]

    init(total: Int, hosts: [HostLimit]) {
        self.total = AsyncSemaphore(value: total)
        entries = hosts.map { ($0, AsyncSemaphore(value: $0.limit)) }
    }

    /// Runs `body` holding a slot of the first entry that matches `authority` (`host:port`), if
    /// any, then a slot of the total.
    ///
    /// Cancellation: a task cancelled while it waits for a slot throws `CancellationError`
    /// and `body` does not run.
    func withSlot<T: Sendable>(for authority: String, _ body: () async throws -> T) async throws -> T {
        let host = entries.first { $0.limit.matches(authority: authority) }?.semaphore
        try await host?.wait()
        defer { host?.signal() }
        try await total.wait()
        defer { total.signal() }
        return try await body()
    }
}
