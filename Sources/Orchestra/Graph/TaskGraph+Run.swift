extension TaskGraph {
    /// Runs the graph: each node starts once its dependencies have returned, at most `limit` at
    /// once, and returns every node's outcome.
    ///
    /// Scheduling: among ready nodes, higher priority first, then the node on the longest
    /// remaining path (sum of `cost` to the end of the graph), then insertion order. A node
    /// whose resource is full never holds back other ready nodes; a node waiting out a retry
    /// backoff gives back its slot and resources.
    ///
    /// Rates: a node that uses a resource of `rateLimits` starts only when that resource's
    /// ``RateLimiter`` (of the rate, `rateBurst` and `clock`, one per resource and run) grants a
    /// permit, and every attempt takes one. Without a permit it waits like a node whose
    /// resource is full: it holds no slot and no resource, so other ready nodes, those of
    /// another resource's rate included, start meanwhile; when the resource's next permit is
    /// due, its waiting nodes compete for it in the usual order. A node takes its slot, its
    /// resources and its permits together and starts at once, so the starts of a resource
    /// follow its rate exactly (any window of length *W* holds at most
    /// `rateBurst + W / rate.spacing` of them). The wait shows as the time between a node's
    /// dependencies ending and its `started` event.
    ///
    /// ```swift
    /// let result = try await graph.run(
    ///     limit: 16, resourceLimits: ["github": 4], rateLimits: ["github": .perHour(5000), "stripe": .perSecond(25)])
    /// ```
    ///
    /// Failures: with ``FailurePolicy/cancelDependents`` (the default) the dependents of a node
    /// that failed or timed out are skipped, naming it, and independent branches go on; with
    /// ``FailurePolicy/failFast`` the first failure cancels every running node, skips the rest
    /// and is thrown. `afterOutcomesOf:` nodes run whatever their dependencies ended with.
    ///
    /// Cancellation: cancelling the awaiting task cancels the running nodes and starts nothing
    /// new; the call then throws `CancellationError` once every running node has ended.
    ///
    /// - Parameters:
    ///   - limit: The most nodes running at once; unlimited by default. Below 1 is rejected.
    ///   - resourceLimits: How many running nodes may use each named resource; every resource a
    ///     node names needs a limit of at least 1, or a rate.
    ///   - rateLimits: How many nodes using each named resource may start per interval; a
    ///     resource with a rate and no limit may be used by any number of running nodes. A rate
    ///     for a resource no node uses is allowed.
    ///   - rateBurst: How many nodes of a rate-limited resource may start at once after a quiet
    ///     time; 1 by default (every start spaced by the rate). Below 1 is rejected.
    ///   - failurePolicy: What a failure does to the rest of the graph.
    ///   - clock: Measures timeouts, backoffs and the start/end offsets in the result.
    /// - Returns: Every node's outcome.
    /// - Throws: ``TaskGraphError`` before anything runs if the graph or a limit is invalid
    ///   (naming the node, the resource or the value); under fail-fast, a ``TaskGraphError``
    ///   with code ``TaskGraphError/Code/nodeFailed`` naming the first node that failed;
    ///   `CancellationError` if the awaiting task was cancelled.
    public func run<C: Clock>(
        limit: Int = .max,
        resourceLimits: [String: Int] = [:],
        rateLimits: [String: Rate] = [:],
        rateBurst: Int = 1,
        failurePolicy: FailurePolicy = .cancelDependents,
        clock: C = ContinuousClock()
    ) async throws -> GraphResult where C.Duration == Duration {
        guard limit >= 1 else {
            throw TaskGraphError(code: .invalidLimit, message: "run(limit:) must be at least 1, got \(limit)")
        }
        let run = try prepareRun(
            limit: limit, resourceLimits: resourceLimits, rateLimits: rateLimits, rateBurst: rateBurst,
            failurePolicy: failurePolicy, clock: clock, observer: nil, function: "run")
        return try await GraphRunner(run).run()
    }

    /// Runs the graph like ``run(limit:resourceLimits:rateLimits:rateBurst:failurePolicy:clock:)`` while `body`
    /// observes and steers it through a ``GraphRun``: its ``GraphRun/events``,
    /// ``GraphRun/progress``, ``GraphRun/cancel(_:)`` for one node, nodes added while it runs
    /// (also from inside a node, through ``GraphRun/current``), and ``GraphRun/result``.
    ///
    /// ```swift
    /// let result = try await graph.withRun(limit: 4) { run in
    ///     async let log: Void = { for await event in run.events { print(event) } }()
    ///     let result = try await run.result
    ///     await log
    ///     return result
    /// }
    /// ```
    ///
    /// The call returns when both `body` and the run have ended. If `body` throws, the run is
    /// cancelled and the error is rethrown. Cancellation: cancelling the calling task cancels
    /// the run as in ``run(limit:resourceLimits:rateLimits:rateBurst:failurePolicy:clock:)``.
    ///
    /// - Parameters:
    ///   - limit: The most nodes running at once; unlimited by default. Below 1 is rejected.
    ///   - resourceLimits: How many running nodes may use each named resource.
    ///   - rateLimits: How many nodes using each named resource may start per interval.
    ///   - rateBurst: How many nodes of a rate-limited resource may start at once after a quiet
    ///     time; at least 1.
    ///   - failurePolicy: What a failure does to the rest of the graph.
    ///   - eventBuffer: How many events may wait for a slow reader; older ones are dropped
    ///     beyond it (1,024 by default).
    ///   - clock: Measures timeouts, backoffs and the offsets in the result.
    ///   - isolation: Where `body` runs; the caller's actor by default.
    ///   - body: Observes and steers the run; its value is returned.
    /// - Throws: What `body` throws (the run is then cancelled), or a ``TaskGraphError`` if the
    ///   graph or a limit is invalid. The run's own outcome is read from ``GraphRun/result``.
    public func withRun<C: Clock, Result>(
        limit: Int = .max,
        resourceLimits: [String: Int] = [:],
        rateLimits: [String: Rate] = [:],
        rateBurst: Int = 1,
        failurePolicy: FailurePolicy = .cancelDependents,
        eventBuffer: Int = 1_024,
        clock: C = ContinuousClock(),
        isolation: isolated (any Actor)? = #isolation,
        _ body: (GraphRun) async throws -> Result
    ) async throws -> Result where C.Duration == Duration {
        guard limit >= 1 else {
            throw TaskGraphError(code: .invalidLimit, message: "withRun(limit:) must be at least 1, got \(limit)")
        }
        let run = GraphRun(eventBuffer: max(eventBuffer, 1))
        let prepared = try prepareRun(
            limit: limit, resourceLimits: resourceLimits, rateLimits: rateLimits, rateBurst: rateBurst,
            failurePolicy: failurePolicy, clock: clock, observer: run, function: "withRun")
        async let driven: Void = {
            let outcome = await Swift.Result { try await GraphRunner(prepared).run() }
            run.finish(with: outcome)
        }()
        let value: Result
        do {
            value = try await body(run)
        } catch {
            // Leaving the scope cancels the async let (the run) and awaits it.
            throw error
        }
        await driven
        return value
    }

    private func prepareRun<C: Clock>(
        limit: Int, resourceLimits: [String: Int], rateLimits: [String: Rate], rateBurst: Int,
        failurePolicy: FailurePolicy, clock: C, observer: GraphRun?, function: String
    ) throws(TaskGraphError) -> GraphRunner.Prepared where C.Duration == Duration {
        guard rateBurst >= 1 else {
            throw TaskGraphError(
                code: .invalidLimit, message: "\(function)(rateBurst:) must be at least 1, got \(rateBurst)")
        }
        // A resource with a rate and no limit: any number of its nodes may run at once.
        var limits = resourceLimits
        for name in rateLimits.keys where limits[name] == nil { limits[name] = .max }
        let (bodies, blueprint) = try blueprint(resourceLimits: limits)
        var prepared = GraphRunner.Prepared(
            bodies: bodies,
            machine: SchedulerStateMachine(blueprint, limit: limit, failurePolicy: failurePolicy),
            clock: RunClock(clock),
            observer: observer
        )
        if !rateLimits.isEmpty {
            prepared.rateLimiters = blueprint.resourceNames.map { name in
                rateLimits[name].map { RateLimiter(rate: $0, burst: rateBurst, clock: clock) }
            }
        }
        return prepared
    }
}

/// The run's clock with its type erased, so the runner is not generic: a generic runner called
/// from another module runs unspecialised, with every clock call through witness tables.
///
/// A class, so each node's task retains one reference, not the three closures.
final class RunClock: Sendable {
    /// Time since the run started.
    let elapsed: @Sendable () -> Duration
    let sleep: @Sendable (Duration) async throws -> Void
    let withTimeout:
        @Sendable (Duration, @escaping @Sendable () async throws -> any Sendable) async throws -> any Sendable

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleep = { delay in try await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil) }
        withTimeout = { timeout, body in try await Orchestra.withTimeout(timeout, clock: clock, body) }
    }
}
