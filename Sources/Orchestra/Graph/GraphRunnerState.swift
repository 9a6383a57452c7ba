import DequeModule

/// A node handed to a worker: what its attempt needs, gathered under the lock. Its inputs read
/// the dependencies' outcomes only when the node asks for them.
struct GraphLaunch: Sendable {
    let node: Int
    let body: TaskGraph.Body
    let timeout: Duration?
    /// Under `withRun`: signalled to cancel this node alone.
    let cancellation: AsyncEvent?
}

/// The state of one run, shared by its workers and its controller behind the runner's lock:
/// the scheduling state machine, every node's outcome so far, the launches no worker has taken
/// yet and the workers parked for want of one.
///
/// Each event method returns, in ``Effects``, what must happen once the lock is released
/// (resume a parked worker, start workers, sleep out a backoff, stop the running nodes); it
/// never resumes a continuation or calls user code itself.
struct GraphRunnerState: Sendable {
    typealias Parked = CheckedContinuation<GraphLaunch?, Never>

    /// What to do after leaving the lock. Empty (and allocation-free) on the hot path: a node
    /// ended and its worker takes the next one itself.
    struct Effects: Sendable {
        /// Parked workers to resume, each with its next launch (`nil`: the run is over).
        var wake: [(Parked, GraphLaunch?)] = []
        /// Workers to start: launches wait in `pending` with no worker parked to take them.
        var spawn = 0
        /// A node waits out a retry backoff.
        var backoff: (node: Int, delay: Duration)?
        /// Rate-limited resources whose parked nodes wait for the resource's next permit.
        var rateWaits: [Int] = []
        /// Fail-fast: every running node must be cancelled.
        var stopRunning = false
        /// Single nodes cancelled through ``GraphRun/cancel(id:)`` while they run.
        var cancelNodes: [AsyncEvent] = []
        /// Every node has ended.
        var finished = false
    }

    private(set) var machine: SchedulerStateMachine
    /// Per resource, its rate limiter (`nil`: no rate); empty when the run has no rates. The
    /// machine counts the permits and the limiter is asked for each one at launch (under this
    /// state's lock, so nobody takes one in between).
    let rateLimiters: [RateLimiter?]
    /// Each node's closure, shared with the graph (not copied); see ``record(_:_:ended:)``.
    private var bodies: [TaskGraph.Body]
    /// Every node's outcome so far. A node never started reads as cancelled, as it is if the
    /// run stops.
    private(set) var outcomes: OutcomeTable
    /// Nodes from this index on were added while the graph runs.
    private let addedFrom: Int
    private let observed: Bool
    /// Reused for every event, so scheduling allocates nothing per node.
    private var transition = SchedulerStateMachine.Transition()
    /// Launched nodes that no worker has taken yet.
    private var pending: Deque<GraphLaunch> = []
    private var parked: [Parked] = []
    private var workers = 0
    private var cancelRequested: Set<Int> = []
    private var nodeCancellations: [Int: AsyncEvent] = [:]
    private(set) var firstFailure: (node: Int, error: any Error)?
    private(set) var runCancelled = false
    /// Events not yet published, in order; only when observed.
    private var events: [GraphEvent] = []
    private var publishing = false

    init(
        machine: SchedulerStateMachine, bodies: [TaskGraph.Body], observed: Bool, rateLimiters: [RateLimiter?] = []
    ) {
        var machine = machine
        for (resource, limiter) in rateLimiters.enumerated() {
            if let limiter { machine.limitRate(ofResource: resource, permits: limiter.grantableNow) }
        }
        self.rateLimiters = rateLimiters
        self.machine = machine
        self.bodies = bodies
        self.outcomes = OutcomeTable(count: bodies.count)
        self.addedFrom = bodies.count
        self.observed = observed
    }

    private var nodes: GraphNodes { machine.blueprint.nodes }

    /// The outcome of the dependency of `node` named `id`, if it has one.
    func outcome(ofDependency id: String, of node: Int) -> NodeOutcome<any Sendable>? {
        for dependency in nodes.dependencies(of: node) where nodes.ids[Int(dependency)] == id {
            return outcomes[Int(dependency)].outcome
        }
        return nil
    }

    var progress: GraphProgress {
        GraphProgress(completed: machine.terminalCount, total: machine.blueprint.count, running: machine.running)
    }

    // MARK: - Events

    /// The run starts: the nodes without dependencies are launched, a worker each.
    mutating func start(now: Duration) -> Effects {
        var effects = Effects()
        var transition = machine.start()
        _ = dispatch(&transition, now: now, keepOne: false, into: &effects)
        return effects
    }

    /// A worker's attempt ended. Returns the worker's next launch, if one is ready.
    ///
    /// - Parameter workerCancelled: Whether the worker's task is cancelled; if the run is not
    ///   already stopping, that means the awaiting task was cancelled, and the run stops.
    mutating func attemptEnded(
        _ node: Int, _ result: Result<any Sendable, any Error>, started: Duration, ended: Duration,
        workerCancelled: Bool, into effects: inout Effects
    ) -> GraphLaunch? {
        if workerCancelled { cancelRun(now: ended, into: &effects) }
        if observed { nodeCancellations[node] = nil }
        let attempts = outcomes.update(node) { record in
            record.attempts += 1
            if !record.hasStarted { record.started = started }
            return record.attempts
        }
        let outcome: SchedulerStateMachine.Outcome
        switch result {
        case .success(let value):
            record(node, .succeeded(value), ended: ended)
            outcome = .succeeded
        case .failure(let failure):
            let policy = nodes.extras(of: node)?.retry ?? .never
            // withRetry's rules: a delay the failure asks for over the policy's
            // maximumServerDelay ends the node with a RetryError instead of a wait.
            let retry =
                !runCancelled && !machine.isHalted && policy.shouldRetry(after: failure, attempt: attempts)
                ? policy.decision(afterAttempt: attempts, error: failure) : nil
            let error = retry?.refusal ?? failure
            if error is CancellationError, runCancelled || machine.isHalted || cancelRequested.contains(node) {
                record(node, .cancelled, ended: ended)
                outcome = .cancelled
            } else if let retry, retry.refusal == nil {
                let delay = min(retry.delay, longestRetrySleep)
                emit(node, .retrying(attempt: attempts, delay: delay, error: error), at: ended)
                effects.backoff = (node, delay)
                var transition = machine.suspendForBackoff(node)
                return dispatch(&transition, now: ended, keepOne: true, into: &effects)
            } else {
                if let timeout = error as? TimeoutError {
                    record(node, .timedOut(timeout), ended: ended)
                } else {
                    record(node, .failed(error), ended: ended)
                }
                if firstFailure == nil { firstFailure = (node, error) }
                outcome = .failed
            }
        }
        // The hot path: the reused transition says what follows.
        var transition = self.transition
        self.transition = SchedulerStateMachine.Transition()
        transition.launch.removeAll(keepingCapacity: true)
        transition.skipped.removeAll(keepingCapacity: true)
        transition.madeReady.removeAll(keepingCapacity: true)
        transition.cancelRunning.removeAll(keepingCapacity: true)
        transition.rateWaits.removeAll(keepingCapacity: true)
        machine.finish(node, outcome, into: &transition)
        let next = dispatch(&transition, now: ended, keepOne: true, into: &effects)
        self.transition = transition
        return next
    }

    /// A worker found nothing to run: it takes a pending launch, or parks (`nil`) until one
    /// comes, or learns that the run is over (`.some(nil)`).
    mutating func park(_ worker: Parked) -> GraphLaunch?? {
        if let launch = pending.popFirst() { return .some(launch) }
        if machine.isFinished { return .some(nil) }
        parked.append(worker)
        return nil
    }

    /// A backoff is over: the node competes for a slot again.
    mutating func backoffEnded(_ node: Int, now: Duration) -> Effects {
        var effects = Effects()
        var transition = machine.resumeAfterBackoff(node)
        _ = dispatch(&transition, now: now, keepOne: false, into: &effects)
        return effects
    }

    /// The rate-limited `resource`'s limiter grants again: its parked nodes compete again,
    /// with as many permits as it grants now.
    mutating func permitsDue(_ resource: Int, now: Duration) -> Effects {
        var effects = Effects()
        let permits = rateLimiters[resource]?.grantableNow ?? 0
        var transition = machine.permitsAvailable(resource, permits: permits)
        _ = dispatch(&transition, now: now, keepOne: false, into: &effects)
        return effects
    }

    /// The awaiting task was cancelled: nothing new starts, the running nodes are cancelled (by
    /// the task cancellation their workers inherit) and every other node ends cancelled.
    mutating func cancelRun(now: Duration, into effects: inout Effects) {
        guard !runCancelled, !machine.isHalted else { return }
        runCancelled = true
        var transition = machine.cancelAll()
        _ = dispatch(&transition, now: now, keepOne: false, into: &effects)
    }

    /// ``GraphRun/cancel(id:)``: one node is cancelled.
    mutating func cancel(id: String, now: Duration) -> Effects {
        var effects = Effects()
        guard let node = machine.blueprint.indexIfPresent(of: id), !machine.states[node].isTerminal else {
            return effects
        }
        cancelRequested.insert(node)
        var transition = machine.cancel(node)
        if machine.states[node] == .cancelled {
            // It had not started (or was waiting out a backoff): it ends now.
            record(node, .cancelled, ended: now)
        }
        if let cancellation = nodeCancellations[node] { effects.cancelNodes.append(cancellation) }
        _ = dispatch(&transition, now: now, keepOne: false, into: &effects)
        return effects
    }

    /// ``GraphRun/add(id:dependsOn:options:operation:)``: a node joins the running graph.
    mutating func add(_ definition: TaskGraph.Definition, now: Duration) throws(TaskGraphError) -> Effects {
        var (index, transition) = try machine.add(definition.spec, extras: definition.extras)
        bodies.append(definition.body)
        outcomes.append()
        precondition(index == bodies.count - 1, "GraphRunner: node indices out of step")
        var effects = Effects()
        emit(index, .added, at: now)
        if machine.states[index] == .cancelled { record(index, .cancelled, ended: now) }
        _ = dispatch(&transition, now: now, keepOne: false, into: &effects)
        return effects
    }

    /// The events not yet published and the progress now, if no one else is publishing; the
    /// caller publishes them and calls again until this returns `nil`, so events leave in the
    /// order they happened whichever worker recorded them.
    mutating func takeEventsToPublish(continuing: Bool) -> ([GraphEvent], GraphProgress)? {
        guard continuing || !publishing else { return nil }
        guard !events.isEmpty || !continuing else {
            publishing = false
            return nil
        }
        publishing = true
        defer { events.removeAll() }
        return (events, progress)
    }

    // MARK: - Internals

    /// Records the skipped nodes, launches the started ones (the caller keeps the first if
    /// `keepOne`; the others go to parked workers or wait in `pending` for new ones) and marks
    /// what must stop.
    private mutating func dispatch(
        _ transition: inout SchedulerStateMachine.Transition, now: Duration, keepOne: Bool,
        into effects: inout Effects
    ) -> GraphLaunch? {
        for skip in transition.skipped {
            record(skip.node, .skipped(cause: nodes.ids[skip.cause]), ended: now)
        }
        var own: GraphLaunch?
        effects.rateWaits.append(contentsOf: transition.rateWaits)
        for node in transition.launch {
            if !rateLimiters.isEmpty { takePermits(for: node) }
            let launch = makeLaunch(node, now: now)
            if keepOne, own == nil {
                own = launch
            } else if let worker = parked.popLast() {
                effects.wake.append((worker, launch))
            } else {
                // No worker is parked: it waits for one. A new worker starts unless there are
                // already `limit` (one of them is then between two nodes and takes it).
                pending.append(launch)
                if workers < machine.limit {
                    workers += 1
                    effects.spawn += 1
                }
            }
        }
        if keepOne, own == nil { own = pending.popFirst() }
        // On a graph larger than the caches, the closures of the nodes to start next would
        // be cold when they start (a miss for the array's slot, another for the context),
        // under the lock (the gain on a deep graph: Benchmarks/History.md, the performance
        // pass's fifth session).
        for node in transition.madeReady { bodies.prefetch(node) }
        if let next = machine.nextReady { TaskGraph.prefetchContext(of: bodies[next]) }
        for node in transition.cancelRunning {
            cancelRequested.insert(node)
            if let cancellation = nodeCancellations[node] { effects.cancelNodes.append(cancellation) }
        }
        // Fail-fast stops every running node.
        if machine.isHalted, !runCancelled, !transition.cancelRunning.isEmpty { effects.stopRunning = true }
        if machine.isFinished {
            effects.finished = true
            for worker in parked { effects.wake.append((worker, nil)) }
            parked.removeAll()
        }
        return own
    }

    /// Takes the permit of each rate-limited resource `node` uses: the machine launched it
    /// because each had one.
    private func takePermits(for node: Int) {
        for resource in machine.blueprint.resources(of: node) {
            guard let limiter = rateLimiters[Int(resource)] else { continue }
            let taken = limiter.tryAcquire()
            assert(taken, "GraphRunner: the machine counted a permit its limiter did not grant")
        }
    }

    private mutating func makeLaunch(_ node: Int, now: Duration) -> GraphLaunch {
        var cancellation: AsyncEvent?
        if observed {
            emit(node, .started(attempt: outcomes[node].attempts + 1), at: now)
            let event = AsyncEvent()
            nodeCancellations[node] = event
            cancellation = event
        }
        return GraphLaunch(
            node: node, body: bodies[node], timeout: nodes.extras(of: node)?.timeout, cancellation: cancellation)
    }

    private static let released: TaskGraph.Body = { _ in
        preconditionFailure("GraphRunner: a node ran after it ended")
    }

    private mutating func record(_ node: Int, _ state: NodeOutcome<any Sendable>.State, ended: Duration) {
        outcomes.update(node) { record in
            record.state = state
            record.ended = ended
        }
        // A node added while the graph runs has ended: the run no longer needs its closure, and
        // only the run holds it. The graph holds the others' for as long as it runs (a run is
        // a call on the graph), so releasing them here would free nothing.
        if node >= addedFrom { bodies[node] = Self.released }
        guard observed else { return }
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

    private mutating func emit(_ node: Int, _ kind: GraphEvent.Kind, at time: Duration) {
        guard observed else { return }
        events.append(GraphEvent(node: nodes.ids[node], kind: kind, time: time))
    }
}
