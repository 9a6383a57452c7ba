import Orchestra

/// The `hosts:` limits: one semaphore per entry, taken around each attempt of a request to a
/// matching authority (a retry's backoff holds none).
final class HostLimiter: Sendable {
    private let entries: [(limit: HostLimit, semaphore: AsyncSemaphore)]

    init(_ limits: [HostLimit]) {
        entries = limits.map { ($0, AsyncSemaphore(value: $0.limit)) }
    }

    /// Runs `body` holding a slot of the first entry that matches `authority` (`host:port`);
    /// at once if none does.
    ///
    /// Cancellation: a task cancelled while it waits for a slot throws `CancellationError`
    /// and `body` does not run.
    func withSlot<T: Sendable>(for authority: String, _ body: () async throws -> T) async throws -> T {
        guard let semaphore = entries.first(where: { $0.limit.matches(authority: authority) })?.semaphore else {
            return try await body()
        }
        try await semaphore.wait()
        defer { semaphore.signal() }
        return try await body()
    }
}
