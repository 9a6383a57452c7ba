/// One run of a graph: a pool of worker tasks that take ready nodes from the scheduling state
/// machine, and a controller (the task that awaits the run) for what a worker cannot do itself.
///
/// A worker runs a node's attempt, then, under one lock, records its outcome, lets the state
/// machine release the dependents and takes the next node it launched: no task and no task
/// switch per node. A worker that finds nothing ready parks until a node is launched or the run
/// ends. There are never more workers than `limit` (nor than nodes that were ever running at
/// once).
///
/// The controller starts workers when launches find none parked, sleeps out retry backoffs in
/// child tasks (a node waiting out a backoff holds no worker and no slot), stops the running
/// nodes under fail-fast, and performs the commands of a ``GraphRun``. Everything it needs
/// reaches it through the inbox, so it suspends only there.
final class GraphRunner: NodeInputSource {
    /// Everything a run starts from, validated before the run's task starts.
    struct Prepared: Sendable {
        let bodies: [TaskGraph.Body]
        let machine: SchedulerStateMachine
        let clock: RunClock
        let observer: GraphRun?
        /// Per resource (the blueprint's order), its rate limiter; empty without rates.
        var rateLimiters: [RateLimiter?] = []
    }

    private let state: Locked<GraphRunnerState>
    private let clock: RunClock
    private let observer: GraphRun?
    /// The controller's inbox: the ``GraphRun``'s commands and the workers' requests.
    private let inbox: GraphRunInbox
    private let failurePolicy: FailurePolicy

    init(_ prepared: Prepared) {
        state = Locked(
            GraphRunnerState(
                machine: prepared.machine, bodies: prepared.bodies, observed: prepared.observer != nil,
                rateLimiters: prepared.rateLimiters))
        clock = prepared.clock
        observer = prepared.observer
        inbox = prepared.observer?.inbox ?? GraphRunInbox()
        failurePolicy = prepared.machine.failurePolicy
    }

    func run() async throws -> GraphResult {
        if let observer {
            try await GraphRun.$current.withValue(observer) { try await control() }
        } else {
            try await control()
        }
        return state.withLock { state in
            GraphResult(nodes: state.machine.blueprint.nodes, outcomes: state.outcomes, duration: clock.elapsed())
        }
    }

    // MARK: - Controller

    private func control() async throws {
        // Discarding: a finished worker or backoff timer leaves nothing behind to collect.
        await withDiscardingTaskGroup { group in
            let effects = state.withLock { $0.start(now: clock.elapsed()) }
            var finished = perform(effects, in: &group)
            var cancellationSeen = false
            while !finished {
                let commands = await inbox.receive(ignoringCancellation: cancellationSeen)
                if Task.isCancelled, !cancellationSeen {
                    cancellationSeen = true
                    var effects = GraphRunnerState.Effects()
                    state.withLock { $0.cancelRun(now: clock.elapsed(), into: &effects) }
                    finished = perform(effects, in: &group) || finished
                }
                for command in commands {
                    finished = handle(command, in: &group) || finished
                }
            }
            // Backoff timers may still wait: stop them. Workers have all been told the run is over.
            group.cancelAll()
        }
        let (runCancelled, firstFailure) = state.withLock { ($0.runCancelled, $0.firstFailure) }
        if runCancelled { throw CancellationError() }
        if let (node, error) = firstFailure, failurePolicy == .failFast {
            let id = state.withLock { $0.machine.blueprint.id(of: node) }
            throw TaskGraphError(
                code: .nodeFailed, message: "node \"\(id)\" failed: \(error)", path: [id], underlying: error)
        }
    }

    /// Performs one command; `true` once the run is over.
    private func handle(_ command: GraphRunInbox.Command, in group: inout DiscardingTaskGroup) -> Bool {
        switch command {
        case .spawnWorkers(let count):
            for _ in 0..<count { group.addTask { await self.work() } }
        case .backoff(let node, let delay):
            group.addTask { [clock] in
                // A cancelled sleep ends the backoff too; the state machine then ignores it.
                try? await clock.sleep(delay)
                let effects = self.state.withLock { $0.backoffEnded(node, now: clock.elapsed()) }
                self.perform(effects)
            }
        case .waitForPermits(let resource):
            guard let limiter = state.withLock({ $0.rateLimiters[resource] }) else { break }
            group.addTask { [clock] in
                // Cancelled: the run is over (or stopped), and the parked nodes with it.
                do { try await limiter.waitUntilGrantable() } catch { return }
                let effects = self.state.withLock { $0.permitsDue(resource, now: clock.elapsed()) }
                self.perform(effects)
            }
        case .stopRunningNodes:
            group.cancelAll()
        case .finished:
            // Sent by the worker that ended the last node; a node added since (a command that
            // came before this one) reopened the run.
            return state.withLock { $0.machine.isFinished }
        case .cancel(let id):
            return perform(state.withLock { $0.cancel(id: id, now: clock.elapsed()) }, in: &group)
        case .add(let definition, let reply):
            let added = state.withLock { state -> Result<GraphRunnerState.Effects, TaskGraphError>? in
                // Every node has ended: the run is over, and a node added now would never run.
                guard !state.machine.isFinished else { return nil }
                return Result { () throws(TaskGraphError) in try state.add(definition, now: clock.elapsed()) }
            }
            switch added {
            case nil:
                reply.resume(throwing: CancellationError())
                return true
            case .success(let effects):
                reply.resume(returning: nil)
                return perform(effects, in: &group)
            case .failure(let error):
                reply.resume(returning: error)
            }
        }
        return false
    }

    /// The controller performs effects itself; `true` once the run is over.
    private func perform(_ effects: GraphRunnerState.Effects, in group: inout DiscardingTaskGroup) -> Bool {
        for _ in 0..<effects.spawn { group.addTask { await self.work() } }
        var rest = effects
        rest.spawn = 0
        rest.finished = false
        perform(rest)
        return effects.finished
    }

    // MARK: - Workers

    /// A worker: takes launched nodes one after another until the run is over.
    private func work() async {
        var next = await park()
        while let launch = next {
            let started = clock.elapsed()
            let result: Result<any Sendable, any Error>
            if let cancellation = launch.cancellation {
                result = await Self.race({ await self.attempt(launch) }, against: cancellation)
            } else {
                result = await attempt(launch)
            }
            let ended = clock.elapsed()
            let cancelled = Task.isCancelled
            var effects = GraphRunnerState.Effects()
            next = state.withLock {
                $0.attemptEnded(
                    launch.node, result, started: started, ended: ended, workerCancelled: cancelled, into: &effects)
            }
            perform(effects)
            if next == nil { next = await park() }
        }
    }

    /// Takes a launch that waits for a worker, or suspends until one is handed over; `nil`
    /// once the run is over.
    private func park() async -> GraphLaunch? {
        await withCheckedContinuation { (worker: GraphRunnerState.Parked) in
            if let ready = state.withLock({ $0.park(worker) }) { worker.resume(returning: ready) }
        }
    }

    /// Effects outside the lock, from any task: parked workers resumed, events published, and
    /// what only the controller can do sent to it.
    private func perform(_ effects: GraphRunnerState.Effects) {
        for (worker, launch) in effects.wake { worker.resume(returning: launch) }
        for cancellation in effects.cancelNodes { cancellation.signal() }
        // Every event records something to publish when the run is observed.
        if observer != nil { publish() }
        if effects.spawn > 0 { inbox.send(.spawnWorkers(effects.spawn)) }
        if let (node, delay) = effects.backoff { inbox.send(.backoff(node: node, delay: delay)) }
        for resource in effects.rateWaits { inbox.send(.waitForPermits(resource: resource)) }
        if effects.stopRunning { inbox.send(.stopRunningNodes) }
        if effects.finished { inbox.send(.finished) }
    }

    /// Publishes the recorded events in order, and the progress after them.
    private func publish() {
        guard let observer else { return }
        var batch = state.withLock { $0.takeEventsToPublish(continuing: false) }
        while let (events, progress) = batch {
            for event in events { observer.eventSink.yield(event) }
            observer.update(progress: progress)
            batch = state.withLock { $0.takeEventsToPublish(continuing: true) }
        }
    }

    /// A node's inputs read their dependencies' outcomes here, when they ask: those ended
    /// before the node started and never change. A node has few dependencies, so a linear
    /// search beats building a dictionary for every node that starts.
    func outcome(ofDependency id: String, of node: Int) -> NodeOutcome<any Sendable>? {
        state.withLock { $0.outcome(ofDependency: id, of: node) }
    }

    /// One attempt of a node's body, within its timeout.
    private func attempt(_ launch: GraphLaunch) async -> Result<any Sendable, any Error> {
        let inputs = NodeInputs(node: launch.node, run: self)
        do {
            if let timeout = launch.timeout {
                let body = launch.body
                return .success(try await clock.withTimeout(timeout) { try await body(inputs) })
            }
            return .success(try await launch.body(inputs))
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
}
