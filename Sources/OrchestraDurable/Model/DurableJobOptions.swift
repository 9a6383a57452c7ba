import Orchestra

/// How one job of a durable run is run: its priority and cost, its time limit per attempt and
/// its retries.
public struct DurableJobOptions: Sendable, Hashable {
    /// Among jobs ready at once, higher runs first.
    public var priority: Int
    /// Expected duration in any unit; 1 by default. Within a priority, the job with the longest
    /// remaining path (its cost plus its costliest chain of dependents) runs first, as in
    /// `TaskGraph`; then the order the jobs were added.
    public var cost: Double
    /// Named resources the job uses while it runs; at most the run's limit for each name run at
    /// once (``DurableQueue/submit(_:runID:limit:resourceLimits:resourceRates:failurePolicy:)``). A ready job
    /// whose resource is full waits without holding back other jobs.
    public var resources: [String]
    /// The time one attempt may take; `nil` for no limit. An attempt past it is cancelled and
    /// counts as failed (and is retried under ``retry``).
    public var timeout: Duration?
    /// Attempts and backoff. A retry's time is stored, so it keeps its schedule across a
    /// restart. Every error is retried while attempts remain, except ``DurableJobFailure`` with
    /// `retryable: false`.
    public var retry: DurableRetry
    /// Whether the job runs at most once rather than at least once: for an effect that must not
    /// happen twice and that the outside world cannot recognise as a repeat (a `POST` without
    /// an `Idempotency-Key`). `false` by default.
    ///
    /// A job runs at least once by default: when its worker dies or stalls (its lease expires),
    /// or stops and gives the job back, the job is made ready again and another attempt runs.
    /// With `atMostOnce`, the job instead ends ``DurableJobState/uncertain`` ("may have been
    /// sent"), its error saying so, whenever its effect may have begun:
    ///
    /// - its lease expired: the store cannot know how far the worker got, so the job is
    ///   uncertain as soon as it was claimed;
    /// - its worker gave it back after its handler had started (a graceful stop whose grace
    ///   period ran out). A job given back before its handler started, or while its handler
    ///   said it was still waiting (``JobContext/markWaiting()``, until
    ///   ``JobContext/markStarted()``), is made ready again: it never began.
    ///
    /// An uncertain job counts as one that did not succeed: its dependents are skipped (or the
    /// run stops, under `FailurePolicy.failFast`) and the run ends failed. Send it again on
    /// demand with ``DurableQueue/resendUncertain(runID:)``. Retries (``retry``) are unchanged:
    /// an attempt that *failed* (the handler threw) is retried as usual, since the handler knows
    /// how it ended.
    ///
    /// ```swift
    /// let charge = JobKind<Payment, Receipt>("charge")
    /// queue.register(charge) { payment, context in
    ///     context.markWaiting()                    // waiting for a connection: not begun
    ///     let connection = try await pool.connection()
    ///     try context.markStarted()                // throws if the job was given back meanwhile
    ///     return try await connection.post(payment)
    /// }
    /// try graph.add("charge-42", charge, input: payment, options: .init(atMostOnce: true))
    /// // Later, after a crash left "charge-42" uncertain and someone checked it was not charged:
    /// try await queue.resendUncertain(runID: "checkout-42")
    /// ```
    public var atMostOnce: Bool

    /// Options with the given values; by default priority 0, cost 1, no resource, no time limit,
    /// one attempt, and at least once.
    public init(
        priority: Int = 0, cost: Double = 1, resources: [String] = [], timeout: Duration? = nil,
        retry: DurableRetry = .never, atMostOnce: Bool = false
    ) {
        self.priority = priority
        self.cost = cost
        self.resources = resources
        self.timeout = timeout
        self.retry = retry
        self.atMostOnce = atMostOnce
    }
}

/// The retries of a durable job: how many attempts, and the backoff between them. The values of
/// `RetryPolicy` that can be stored (no closures, no jitter: a stored schedule is replayed
/// as it was).
public struct DurableRetry: Sendable, Hashable {
    /// Attempts in all, the first one included; at least 1.
    public var maxAttempts: Int
    /// The wait before the second attempt.
    public var initialDelay: Duration
    /// Each wait is the previous one times this.
    public var multiplier: Double
    /// No wait is longer than this.
    public var maxDelay: Duration

    /// One attempt, no retry.
    public static let never = DurableRetry(maxAttempts: 1, initialDelay: .zero)

    /// Up to `maxAttempts` attempts, waiting `initialDelay`, then `multiplier` times longer
    /// each time, at most `maxDelay`.
    public init(
        maxAttempts: Int, initialDelay: Duration = .seconds(1), multiplier: Double = 2,
        maxDelay: Duration = .seconds(300)
    ) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
    }

    /// The wait after failed attempt `attempt` (1 for the first).
    func delay(afterAttempt attempt: Int) -> Duration {
        RetryPolicy(maxAttempts: maxAttempts, initialDelay: initialDelay, multiplier: multiplier, maxDelay: maxDelay)
            .backoff(afterAttempt: attempt)
    }
}

/// Thrown by a handler to say how its job failed: with `retryable: false`, no attempt is left
/// to try (a request the server refused for good).
public struct DurableJobFailure: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as the job's record keeps it.
    public var message: String
    /// Whether another attempt may succeed.
    public var retryable: Bool

    /// A failure saying `message`.
    public init(_ message: String, retryable: Bool = true) {
        self.message = message
        self.retryable = retryable
    }

    public var description: String { message }
}
