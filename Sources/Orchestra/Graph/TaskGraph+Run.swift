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
        let run = try prepareRun(
            limit: limit, resourceLimits: resourceLimits, failurePolicy: failurePolicy, clock: clock, observer: nil)
        return try await GraphRunner(run).run()
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
        let prepared = try prepareRun(
            limit: limit, resourceLimits: resourceLimits, failurePolicy: failurePolicy, clock: clock, observer: run)
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
        limit: Int, resourceLimits: [String: Int], failurePolicy: FailurePolicy, clock: C, observer: GraphRun?
    ) throws(TaskGraphError) -> GraphRunner.Prepared where C.Duration == Duration {
        let (bodies, blueprint) = try blueprint(resourceLimits: resourceLimits)
        return GraphRunner.Prepared(
            graph: self,
            bodies: bodies,
            machine: SchedulerStateMachine(blueprint, limit: limit, failurePolicy: failurePolicy),
            clock: RunClock(clock),
            observer: observer
        )
    }
}

/// One run of a graph: the scheduling state machine, driven by the ends of the nodes' child
/// tasks (and, under `withRun`, by commands from the ``GraphRun``), all in one task group owned
/// by the run. Only the run loop touches this state: the runner is made in the task that runs
/// it, and is not `Sendable`. (A class, not a struct: a struct's `mutating async` loop copies
/// the whole state, every array retained and released, on each event.)
final class GraphRunner {
    /// Everything a run starts from, validated before the run's task starts.
    struct Prepared: Sendable {
        let graph: TaskGraph
        let bodies: [TaskGraph.Body]
        let machine: SchedulerStateMachine
        let clock: RunClock
        let observer: GraphRun?
    }

    private enum Event: Sendable {
        /// An attempt ended; `started` and `ended` are read by the child itself, so the run
        /// loop reads no clock for it and the times are exact.
        case attemptEnded(node: Int, result: Result<any Sendable, any Error>, started: Duration, ended: Duration)
        case backoffEnded(node: Int)
        case commands([GraphRunInbox.Command])
    }

    /// Each node's closure, shared with the graph (not copied). A node's closure is released
    /// when the node ends if nothing else holds it: if it was added while the graph runs, or
    /// if the graph itself is gone. While the graph exists it keeps its closures to run again,
    /// and releasing the run's reference would free nothing.
    // `@exclusivity(unchecked)` on the state touched for every node: only the run loop's task
    // uses a runner, so the dynamic checks Swift adds to a class's stored properties are pure
    // cost here.
    @exclusivity(unchecked) private var bodies: [TaskGraph.Body]
    private weak var graph: TaskGraph?
    /// Nodes from this index on were added while the graph runs.
    private let addedFrom: Int
    /// The graph's structure (ids, dependencies, options) is the blueprint's, shared with the
    /// graph and never copied unless a node is added while the graph runs.
    @exclusivity(unchecked) private var machine: SchedulerStateMachine
    private let clock: RunClock
    private let observer: GraphRun?
    /// Every node's outcome as it is known so far; attempts and start time are filled in as the
    /// node runs. A node never started reads as cancelled, as it is if the run stops.
    @exclusivity(unchecked) private var outcomes: [OutcomeRecord]
    /// Reused for every event, so scheduling allocates nothing per node.
    @exclusivity(unchecked) private var transition = SchedulerStateMachine.Transition()
    /// Under `withRun`: the signal that cancels each running node on its own.
    @exclusivity(unchecked) private var nodeCancellations: [Int: AsyncEvent] = [:]
    private var cancelRequested: Set<Int> = []
    private var firstFailure: (node: Int, error: any Error)?
    private var runCancelled = false

    init(_ prepared: Prepared) {
        self.graph = prepared.graph
        self.bodies = prepared.bodies
        self.addedFrom = prepared.bodies.count
        self.machine = prepared.machine
        self.clock = prepared.clock
        self.observer = prepared.observer
        self.outcomes = Array(repeating: OutcomeRecord(), count: prepared.bodies.count)
    }

    private static let released: TaskGraph.Body = { _ in
        preconditionFailure("GraphRunner: a node ran after it ended")
    }

    private var elapsed: Duration { clock.elapsed() }
    private var nodes: GraphNodes { machine.blueprint.nodes }

    func run() async throws -> GraphResult {
        if let observer {
            try await GraphRun.$current.withValue(observer) { try await loop() }
        } else {
            try await loop()
        }
        return GraphResult(nodes: nodes, outcomes: outcomes, duration: elapsed)
    }

    private func loop() async throws {
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
            let id = nodes.ids[node]
            throw TaskGraphError(
                code: .nodeFailed, message: "node \"\(id)\" failed: \(error)", path: [id], underlying: error)
        }
    }

    private func handle(_ event: Event, in group: inout TaskGroup<Event>) {
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
        case .attemptEnded(let node, .success(let value), let started, let ended):
            if observer != nil { nodeCancellations[node] = nil }
            countAttempt(of: node, started: started)
            record(node, .succeeded(value), ended: ended)
            finish(node, .succeeded, in: &group)
        case .attemptEnded(let node, .failure(let error), let started, let ended):
            nodeCancellations[node] = nil
            countAttempt(of: node, started: started)
            let policy = nodes.extras[node]?.retry ?? .never
            let attempts = outcomes[node].attempts
            if error is CancellationError, runCancelled || machine.isHalted || cancelRequested.contains(node) {
                record(node, .cancelled, ended: ended)
                finish(node, .cancelled, in: &group)
            } else if !runCancelled, !machine.isHalted, policy.shouldRetry(after: error, attempt: attempts) {
                let delay = policy.delay(afterAttempt: attempts, error: error)
                emit(node, .retrying(attempt: attempts, delay: delay, error: error))
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
                finish(node, .failed, in: &group)
            }
        }
    }

    /// The hot path: a node ended; the reused transition says what follows.
    private func finish(_ node: Int, _ outcome: SchedulerStateMachine.Outcome, in group: inout TaskGroup<Event>) {
        var transition = self.transition
        self.transition = SchedulerStateMachine.Transition()
        transition.launch.removeAll(keepingCapacity: true)
        transition.skipped.removeAll(keepingCapacity: true)
        transition.cancelRunning.removeAll(keepingCapacity: true)
        machine.finish(node, outcome, into: &transition)
        apply(transition, to: &group)
        self.transition = transition
    }

    private func perform(_ command: GraphRunInbox.Command, in group: inout TaskGroup<Event>) {
        switch command {
        case .cancel(let id):
            guard let node = machine.blueprint.indexIfPresent(of: id), !machine.states[node].isTerminal else { return }
            cancelRequested.insert(node)
            let transition = machine.cancel(node)
            if machine.states[node] == .cancelled {
                // It had not started (or was waiting out a backoff): it ends now.
                record(node, .cancelled, ended: elapsed)
            }
            nodeCancellations[node]?.signal()
            apply(transition, to: &group)
        case .add(let definition, let reply):
            do {
                let (index, transition) = try machine.add(definition.spec, extras: definition.extras)
                bodies.append(definition.body)
                outcomes.append(OutcomeRecord())
                precondition(index == bodies.count - 1, "GraphRunner: node indices out of step")
                emit(index, .added)
                if machine.states[index] == .cancelled { record(index, .cancelled, ended: elapsed) }
                apply(transition, to: &group)
                reply.resume(returning: nil)
            } catch {
                reply.resume(returning: error)
            }
        }
    }

    /// Records the skipped nodes, starts the launched ones and cancels what must stop.
    private func apply(_ transition: SchedulerStateMachine.Transition, to group: inout TaskGroup<Event>) {
        for skip in transition.skipped {
            record(skip.node, .skipped(cause: nodes.ids[skip.cause]), ended: elapsed)
        }
        for node in transition.launch {
            launch(node, in: &group)
        }
        for node in transition.cancelRunning {
            cancelRequested.insert(node)
            nodeCancellations[node]?.signal()
        }
        // Fail-fast and cancelling the run stop every running node.
        if machine.isHalted, !transition.cancelRunning.isEmpty { group.cancelAll() }
    }

    /// Counts an attempt that ended; the node's start is its first attempt's.
    private func countAttempt(of node: Int, started: Duration) {
        outcomes[node].attempts += 1
        if !outcomes[node].hasStarted { outcomes[node].started = started }
    }

    private func launch(_ node: Int, in group: inout TaskGroup<Event>) {
        if observer != nil { emit(node, .started(attempt: outcomes[node].attempts + 1)) }
        // Only what the child needs: its closure, its inputs and its timeout.
        let body = bodies[node]
        let timeout = nodes.extras[node]?.timeout
        let dependencies = nodes.dependencies[node]
        let inputs = NodeInputs(
            ids: nodes.ids, dependencies: dependencies,
            outcomes: dependencies.isEmpty ? [] : dependencies.map { outcomes[Int($0)] }
        )
        let clock = clock
        if observer == nil {
            group.addTask {
                let started = clock.elapsed()
                let result = await GraphRunner.attempt(body, inputs, timeout: timeout, clock: clock)
                return .attemptEnded(node: node, result: result, started: started, ended: clock.elapsed())
            }
            return
        }
        let cancellation = AsyncEvent()
        nodeCancellations[node] = cancellation
        group.addTask {
            let started = clock.elapsed()
            let result = await GraphRunner.race(
                { await GraphRunner.attempt(body, inputs, timeout: timeout, clock: clock) }, against: cancellation)
            return .attemptEnded(node: node, result: result, started: started, ended: clock.elapsed())
        }
    }

    /// One attempt of a node's body, within its timeout.
    private static func attempt(
        _ body: @escaping TaskGraph.Body, _ inputs: NodeInputs, timeout: Duration?, clock: RunClock
    ) async -> Result<any Sendable, any Error> {
        do {
            if let timeout {
                return .success(try await clock.withTimeout(timeout) { try await body(inputs) })
            }
            return .success(try await body(inputs))
        } catch {
            return .failure(error)
        }
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

    private func record(_ node: Int, _ state: NodeOutcome<any Sendable>.State, ended: Duration) {
        outcomes[node].state = state
        outcomes[node].ended = ended
        // The node has ended: the run no longer needs its closure (the graph may still hold it).
        if node >= addedFrom || graph == nil { bodies[node] = Self.released }
        guard observer != nil else { return }
        let kind: GraphEvent.Kind =
            switch state {
            case .succeeded: .succeeded
            case .failed(let error): .failed(error)
            case .timedOut(let error): .timedOut(error)
            case .skipped(let cause): .skipped(cause: cause)
            case .cancelled: .cancelled
            }
        emit(node, kind, at: ended)
    }

    private func emit(_ node: Int, _ kind: GraphEvent.Kind, at time: Duration? = nil) {
        guard let observer else { return }
        observer.eventSink.yield(GraphEvent(node: nodes.ids[node], kind: kind, time: time ?? elapsed))
    }

    private func publishProgress() {
        observer?.update(
            progress: GraphProgress(
                completed: machine.terminalCount, total: machine.blueprint.count, running: machine.running))
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
