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
        var runner = try prepareRun(limit: limit, resourceLimits: resourceLimits, failurePolicy: failurePolicy, clock: clock, observer: nil)
        return try await runner.run()
    }

    /// Runs the graph like ``run(limit:resourceLimits:failurePolicy:clock:)`` while `body`
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
    /// the run as in ``run(limit:resourceLimits:failurePolicy:clock:)``.
    ///
    /// - Parameters:
    ///   - limit: The most nodes running at once; unlimited by default. Below 1 is rejected.
    ///   - resourceLimits: How many running nodes may use each named resource.
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
        let runner = try prepareRun(limit: limit, resourceLimits: resourceLimits, failurePolicy: failurePolicy, clock: clock, observer: run)
        async let driven: Void = {
            var runner = runner
            let outcome = await Swift.Result { try await runner.run() }
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
        limit: Int, resourceLimits: [String: Int], failurePolicy: FailurePolicy, clock: C, observer: GraphRun?
    ) throws(TaskGraphError) -> GraphRunner where C.Duration == Duration {
        let (definitions, blueprint) = try blueprint(resourceLimits: resourceLimits)
        return GraphRunner(
            definitions: definitions,
            machine: SchedulerStateMachine(blueprint, limit: limit, failurePolicy: failurePolicy),
            clock: RunClock(clock),
            observer: observer
        )
    }
}

/// One run of a graph: the scheduling state machine, driven by the ends of the nodes' child
/// tasks (and, under `withRun`, by commands from the ``GraphRun``), all in one task group owned
/// by the run. Only the run loop touches this state.
struct GraphRunner: Sendable {
    private enum Event: Sendable {
        case attemptEnded(node: Int, result: Result<any Sendable, any Error>, ended: Duration)
        case backoffEnded(node: Int)
        case commands([GraphRunInbox.Command])
    }

    /// Shared with the graph's snapshot and only read, so it is never copied (only appended
    /// to when a node is added while the graph runs).
    private var definitions: [TaskGraph.Definition]
    /// Each node's closure, released as soon as the node has ended.
    private var bodies: [(@Sendable (NodeInputs) async throws -> any Sendable)?]
    private var machine: SchedulerStateMachine
    private let clock: RunClock
    private let observer: GraphRun?
    private var outcomes: [NodeOutcome<any Sendable>?]
    private var attempts: [Int]
    private var started: [Duration?]
    /// Under `withRun`: the signal that cancels each running node on its own.
    private var nodeCancellations: [Int: AsyncEvent] = [:]
    private var cancelRequested: Set<Int> = []
    private var firstFailure: (node: Int, error: any Error)?
    private var runCancelled = false

    init(definitions: [TaskGraph.Definition], machine: SchedulerStateMachine, clock: RunClock, observer: GraphRun?) {
        self.definitions = definitions
        self.bodies = definitions.map(\.body)
        self.machine = machine
        self.clock = clock
        self.observer = observer
        self.outcomes = Array(repeating: nil, count: definitions.count)
        self.attempts = Array(repeating: 0, count: definitions.count)
        self.started = Array(repeating: nil, count: definitions.count)
    }

    private var elapsed: Duration { clock.elapsed() }

    mutating func run() async throws -> GraphResult {
        if let observer {
            try await GraphRun.$current.withValue(observer) { try await loop() }
        } else {
            try await loop()
        }
        return GraphResult(ids: definitions.map(\.id), outcomes: finalOutcomes(), duration: elapsed)
    }

    private mutating func loop() async throws {
        await withTaskGroup(of: Event.self) { group in
            if let observer {
                group.addTask { .commands(await observer.inbox.receive()) }
            }
            apply(machine.start(), to: &group)
            publishProgress()
            while !machine.isFinished, let event = await group.next() {
                if Task.isCancelled, !runCancelled {
                    runCancelled = true
                    apply(machine.cancelAll(), to: &group)
                }
                handle(event, in: &group)
                publishProgress()
            }
            // Backoff timers and the command listener may still wait: stop them.
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
    }

    private mutating func handle(_ event: Event, in group: inout TaskGroup<Event>) {
        switch event {
        case .commands(let commands):
            for command in commands { perform(command, in: &group) }
            // Once the run stops, the group is cancelled and a new listener would return at
            // once, over and over: commands are then refused by closing the inbox at the end.
            if let observer, !Task.isCancelled, !machine.isHalted, !runCancelled {
                group.addTask { .commands(await observer.inbox.receive()) }
            }
        case .backoffEnded(let node):
            apply(machine.resumeAfterBackoff(node), to: &group)
        case .attemptEnded(let node, .success(let value), let ended):
            nodeCancellations[node] = nil
            record(node, .succeeded(value), ended: ended)
            apply(machine.finish(node, .succeeded), to: &group)
        case .attemptEnded(let node, .failure(let error), let ended):
            nodeCancellations[node] = nil
            let policy = definitions[node].options.retry
            if error is CancellationError, runCancelled || machine.isHalted || cancelRequested.contains(node) {
                record(node, .cancelled, ended: ended)
                apply(machine.finish(node, .cancelled), to: &group)
            } else if !runCancelled, !machine.isHalted, policy.shouldRetry(after: error, attempt: attempts[node]) {
                let delay = policy.delay(afterAttempt: attempts[node], error: error)
                emit(definitions[node].id, .retrying(attempt: attempts[node], delay: delay, error: error))
                apply(machine.suspendForBackoff(node), to: &group)
                group.addTask { [clock] in
                    // A cancelled sleep ends the backoff too; the state machine then ignores it.
                    try? await clock.sleep(delay)
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

    private mutating func perform(_ command: GraphRunInbox.Command, in group: inout TaskGroup<Event>) {
        switch command {
        case .cancel(let id):
            guard let node = machine.blueprint.indexIfPresent(of: id), !machine.states[node].isTerminal else { return }
            cancelRequested.insert(node)
            let transition = machine.cancel(node)
            if machine.states[node] == .cancelled, outcomes[node] == nil {
                record(node, .cancelled, ended: elapsed)
            }
            nodeCancellations[node]?.signal()
            apply(transition, to: &group)
        case .add(let definition, let reply):
            do {
                let spec = NodeSpec(
                    id: definition.id, dependencies: definition.dependencies, cost: definition.options.cost,
                    priority: definition.options.priority, resources: definition.options.resources,
                    runsAfterAnyOutcome: definition.runsAfterAnyOutcome
                )
                let (index, transition) = try machine.add(spec)
                definitions.append(definition)
                bodies.append(definition.body)
                outcomes.append(nil)
                attempts.append(0)
                started.append(nil)
                precondition(index == definitions.count - 1, "GraphRunner: node indices out of step")
                emit(definition.id, .added)
                if machine.states[index] == .cancelled { record(index, .cancelled, ended: elapsed) }
                apply(transition, to: &group)
                reply.resume(returning: nil)
            } catch {
                reply.resume(returning: error)
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
            emit(definitions[node].id, .started(attempt: attempts[node]))
            // Only what the child needs: not the whole definition.
            let timeout = definitions[node].options.timeout
            let body = bodies[node]!
            let inputs = NodeInputs(
                ids: definitions[node].dependencies,
                outcomes: machine.blueprint.dependencies[node].map { outcomes[$0]! }
            )
            let attempt: @Sendable () async -> Result<any Sendable, any Error> = { [clock] in
                await Result {
                    if let timeout {
                        return try await clock.withTimeout(timeout) { try await body(inputs) }
                    }
                    return try await body(inputs)
                }
            }
            let cancellation: AsyncEvent? = observer == nil ? nil : AsyncEvent()
            nodeCancellations[node] = cancellation
            group.addTask { [clock] in
                let result = if let cancellation {
                    await Self.race(attempt, against: cancellation)
                } else {
                    await attempt()
                }
                // Read here, not when the run loop gets to the event, so the end is exact.
                return .attemptEnded(node: node, result: result, ended: clock.elapsed())
            }
        }
        for node in transition.cancelRunning {
            cancelRequested.insert(node)
            nodeCancellations[node]?.signal()
        }
        // Fail-fast and cancelling the run stop every running node.
        if machine.isHalted, !transition.cancelRunning.isEmpty { group.cancelAll() }
    }

    /// Runs `attempt`, cancelling it when `cancellation` is signalled (a single node cancelled
    /// through ``GraphRun/cancel(_:)``), and returns how it ended.
    private static func race(
        _ attempt: @escaping @Sendable () async -> Result<any Sendable, any Error>,
        against cancellation: AsyncEvent
    ) async -> Result<any Sendable, any Error> {
        await withTaskGroup(of: Result<any Sendable, any Error>?.self) { race in
            race.addTask { await attempt() }
            race.addTask {
                try? await cancellation.wait()
                return nil
            }
            var outcome: Result<any Sendable, any Error>?
            while outcome == nil, let next = await race.next() {
                race.cancelAll()
                outcome = next
            }
            return outcome ?? .failure(CancellationError())
        }
    }

    private mutating func record(_ node: Int, _ state: NodeOutcome<any Sendable>.State, ended: Duration) {
        outcomes[node] = NodeOutcome(state: state, attempts: attempts[node], started: started[node], ended: ended)
        // The node has ended: the run no longer needs its closure (the graph may still hold it).
        bodies[node] = nil
        let kind: GraphEvent.Kind = switch state {
        case .succeeded: .succeeded
        case .failed(let error): .failed(error)
        case .timedOut(let error): .timedOut(error)
        case .skipped(let cause): .skipped(cause: cause)
        case .cancelled: .cancelled
        }
        emit(definitions[node].id, kind, at: ended)
    }

    private func emit(_ node: String, _ kind: GraphEvent.Kind, at time: Duration? = nil) {
        observer?.eventSink.yield(GraphEvent(node: node, kind: kind, time: time ?? elapsed))
    }

    private func publishProgress() {
        observer?.update(progress: GraphProgress(completed: machine.terminalCount, total: machine.blueprint.count, running: machine.running))
    }

    /// Nodes the run cancelled before they started have no recorded outcome yet.
    private func finalOutcomes() -> [NodeOutcome<any Sendable>] {
        outcomes.enumerated().map { node, outcome in
            outcome ?? NodeOutcome(state: .cancelled, attempts: attempts[node], started: started[node], ended: nil)
        }
    }
}

/// The run's clock with its type erased, so the runner is not generic: a generic runner called
/// from another module runs unspecialised, with every clock call through witness tables.
struct RunClock: Sendable {
    /// Time since the run started.
    let elapsed: @Sendable () -> Duration
    let sleep: @Sendable (Duration) async throws -> Void
    let withTimeout: @Sendable (Duration, @escaping @Sendable () async throws -> any Sendable) async throws -> any Sendable

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleep = { delay in try await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil) }
        withTimeout = { timeout, body in try await Orchestra.withTimeout(timeout, clock: clock, body) }
    }
}
