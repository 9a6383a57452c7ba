extension TaskGraph {
    /// Runs the graph: each node starts once its dependencies have returned, at most `limit` at
    /// once, and returns every node's outcome.
    ///
    /// Scheduling: among ready nodes, higher priority first, then the node on the longest
    /// remaining path (sum of `cost` to the end of the graph), then insertion order. A node
    /// whose resource is full never holds back other ready nodes; a node waiting out a retry
    /// backoff gives back its slot and resources.
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
    ///     node names needs a limit of at least 1.
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
        failurePolicy: FailurePolicy = .cancelDependents,
        clock: C = ContinuousClock()
    ) async throws -> GraphResult where C.Duration == Duration {
        guard limit >= 1 else {
            throw TaskGraphError(code: .invalidLimit, message: "run(limit:) must be at least 1, got \(limit)")
        }
        let (definitions, blueprint) = try blueprint(resourceLimits: resourceLimits)
        var runner = GraphRunner(
            definitions: definitions,
            machine: SchedulerStateMachine(blueprint, limit: limit, failurePolicy: failurePolicy),
            clock: clock
        )
        return try await runner.run()
    }
}

/// One run of a graph: the scheduling state machine, driven by the ends of the nodes' child
/// tasks, all in one task group owned by the run.
struct GraphRunner<C: Clock> where C.Duration == Duration {
    private enum Event: Sendable {
        case attemptEnded(node: Int, result: Result<any Sendable, any Error>, ended: Duration)
        case backoffEnded(node: Int)
    }

    private let definitions: [TaskGraph.Definition]
    private var machine: SchedulerStateMachine
    private let clock: C
    private let start: C.Instant
    private var outcomes: [NodeOutcome<any Sendable>?]
    private var attempts: [Int]
    private var started: [Duration?]
    private var firstFailure: (node: Int, error: any Error)?
    private var runCancelled = false

    init(definitions: [TaskGraph.Definition], machine: SchedulerStateMachine, clock: C) {
        self.definitions = definitions
        self.machine = machine
        self.clock = clock
        self.start = clock.now
        self.outcomes = Array(repeating: nil, count: definitions.count)
        self.attempts = Array(repeating: 0, count: definitions.count)
        self.started = Array(repeating: nil, count: definitions.count)
    }

    private var elapsed: Duration { start.duration(to: clock.now) }

    mutating func run() async throws -> GraphResult {
        await withTaskGroup(of: Event.self) { group in
            apply(machine.start(), to: &group)
            while !machine.isFinished, let event = await group.next() {
                if Task.isCancelled, !runCancelled {
                    runCancelled = true
                    apply(machine.cancelAll(), to: &group)
                }
                handle(event, in: &group)
            }
            // Backoff timers of nodes that ended otherwise may still sleep: stop them.
            group.cancelAll()
        }
        if runCancelled { throw CancellationError() }
        if let (node, error) = firstFailure, machine.failurePolicy == .failFast {
            throw TaskGraphError(
                code: .nodeFailed,
                message: "node \"\(definitions[node].id)\" failed: \(error)",
                path: [definitions[node].id],
                underlying: error
            )
        }
        return GraphResult(ids: definitions.map(\.id), outcomes: finalOutcomes(), duration: elapsed)
    }

    private mutating func handle(_ event: Event, in group: inout TaskGroup<Event>) {
        switch event {
        case .backoffEnded(let node):
            apply(machine.resumeAfterBackoff(node), to: &group)
        case .attemptEnded(let node, .success(let value), let ended):
            record(node, .succeeded(value), ended: ended)
            apply(machine.finish(node, .succeeded), to: &group)
        case .attemptEnded(let node, .failure(let error), let ended):
            let policy = definitions[node].options.retry
            if error is CancellationError, runCancelled || machine.isHalted {
                record(node, .cancelled, ended: ended)
                apply(machine.finish(node, .cancelled), to: &group)
            } else if !runCancelled, !machine.isHalted, policy.shouldRetry(after: error, attempt: attempts[node]) {
                let delay = policy.delay(afterAttempt: attempts[node], error: error)
                apply(machine.suspendForBackoff(node), to: &group)
                group.addTask { [clock] in
                    // A cancelled sleep ends the backoff too; the state machine then ignores it.
                    try? await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil)
                    return .backoffEnded(node: node)
                }
            } else {
                if let timeout = error as? TimeoutError {
                    record(node, .timedOut(timeout), ended: ended)
                } else {
                    record(node, .failed(error), ended: ended)
                }
                if firstFailure == nil { firstFailure = (node, error) }
                apply(machine.finish(node, .failed), to: &group)
            }
        }
    }

    /// Records the skipped nodes, starts the launched ones and cancels what must stop.
    private mutating func apply(_ transition: SchedulerStateMachine.Transition, to group: inout TaskGroup<Event>) {
        for skip in transition.skipped {
            record(skip.node, .skipped(cause: definitions[skip.cause].id), ended: elapsed)
        }
        for node in transition.launch {
            attempts[node] += 1
            if started[node] == nil { started[node] = elapsed }
            let definition = definitions[node]
            let inputs = NodeInputs(outcomes: Dictionary(
                definition.dependencies.map { ($0, outcomes[indexOf($0)]!) },
                uniquingKeysWith: { first, _ in first }
            ))
            group.addTask { [clock, start] in
                let result = await Result {
                    if let timeout = definition.options.timeout {
                        return try await withTimeout(timeout, clock: clock) { try await definition.body(inputs) }
                    }
                    return try await definition.body(inputs)
                }
                // Read here, not when the run loop gets to the event, so the end is exact.
                return .attemptEnded(node: node, result: result, ended: start.duration(to: clock.now))
            }
        }
        // Only fail-fast returns running nodes to cancel, and it stops them all.
        if !transition.cancelRunning.isEmpty { group.cancelAll() }
    }

    private func indexOf(_ id: String) -> Int {
        machine.blueprint.index(of: id)
    }

    private mutating func record(_ node: Int, _ state: NodeOutcome<any Sendable>.State, ended: Duration) {
        outcomes[node] = NodeOutcome(state: state, attempts: attempts[node], started: started[node], ended: ended)
    }

    /// Nodes the run cancelled before they started have no recorded outcome yet.
    private func finalOutcomes() -> [NodeOutcome<any Sendable>] {
        outcomes.enumerated().map { node, outcome in
            outcome ?? NodeOutcome(state: .cancelled, attempts: attempts[node], started: started[node], ended: nil)
        }
    }
}
