import OrchestraDurable
import ServiceLifecycle

/// A durable worker as a swift-service-lifecycle `Service`: a server app runs it in its
/// `ServiceGroup` beside its other services, and the group's graceful shutdown (SIGTERM, for
/// a group configured with it) stops it gracefully.
///
/// ```swift
/// try await PostgresJobStore.withStore(url: databaseURL) { store in
///     let queue = DurableQueue(store: store, leaseDuration: .seconds(60))
///     queue.register(fetch) { request, context in try await api.fetch(request, key: context.idempotencyKey) }
///     let group = ServiceGroup(
///         services: [DurableWorkerService(queue: queue, limit: 16), httpServer],
///         gracefulShutdownSignals: [.sigterm], logger: logger)
///     try await group.run()
/// }
/// ```
///
/// It works as `DurableQueue.work(limit:until:gracePeriod:)` (OrchestraDurable) does: it claims
/// jobs of its queue's kinds until shut down, waiting for new runs when there are none. On
/// graceful shutdown it claims nothing more, lets its running jobs finish for up to
/// `gracePeriod`, then gives back the leases of those still running so that another worker
/// takes them at once. Cancelled (a shutdown that is not graceful), it stops its handlers and
/// leaves their jobs to be claimed again when their leases expire, as after a crash.
public struct DurableWorkerService: Service {
    /// The queue whose handlers run the jobs.
    public let queue: DurableQueue
    /// How many jobs this worker runs at once.
    public let limit: Int
    /// How long a graceful shutdown waits for running jobs before it gives them back.
    public let gracePeriod: Duration

    /// A worker that runs up to `limit` of `queue`'s jobs at once.
    public init(queue: DurableQueue, limit: Int = 8, gracePeriod: Duration = .seconds(30)) {
        precondition(limit >= 1, "DurableWorkerService: limit must be at least 1, got \(limit)")
        self.queue = queue
        self.limit = limit
        self.gracePeriod = gracePeriod
    }

    public func run() async throws {
        let stop = DurableStopSignal()
        try await withGracefulShutdownHandler {
            try await queue.work(limit: limit, until: stop, gracePeriod: gracePeriod)
        } onGracefulShutdown: {
            stop.request()
        }
    }
}
