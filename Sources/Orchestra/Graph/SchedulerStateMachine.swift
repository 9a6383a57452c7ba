/// What happens to the dependents of a node that failed.
public enum FailurePolicy: Sendable, Hashable {
    /// Dependents of a failed node are skipped, naming the failure; independent branches go on.
    case cancelDependents
    /// The first failure cancels everything still running and skips everything not started.
    case failFast
}

/// The scheduling policy of a task graph, as a pure state machine: no tasks, no clocks, so a
/// runner and a discrete-event simulation drive it the same way.
///
/// Rules:
/// - A node becomes ready when every dependency succeeded (an `afterOutcomesOf:` node: when
///   every dependency ended, however).
/// - Among ready nodes the one started next has the highest priority; within a priority, the
///   longest remaining path (``GraphBlueprint/bottomLevels``); then the lowest insertion index.
///   Durable runs follow the same order and the same limits: `ClaimPlanner` in OrchestraDurable
///   holds them for both job stores (it puts a job's due time, a retry's or when it became
///   ready, before its position). `ClaimOrderTests` runs one graph through this machine and
///   through each store's claims and compares the start order.
/// - At most `limit` nodes run at once, and at most each resource's limit use that resource. A
///   ready node whose resource is full is parked and never blocks other ready nodes.
/// - A node waiting out a retry backoff holds no slot and no resource.
/// - A node that uses a rate-limited resource starts only while that resource has a permit
///   (``limitRate(ofResource:permits:)``); without one it is parked like a node whose resource is
///   full, holding no slot and no resource, and the run's clock wakes it
///   (``Transition/rateWaits``, then ``permitsAvailable(_:permits:)``). A slot, the resources
///   and the permits are taken together, so a node starts the moment it is granted its permit.
/// - A node that fails, is cancelled or skipped makes its ordinary dependents skipped (with the
///   root cause); under ``FailurePolicy/failFast`` it ends the whole run.
///
/// Complexity: each event is O(log ready + affected edges).
struct SchedulerStateMachine: Sendable {
    enum Order: Sendable {
        /// Priority, then longest remaining path, then insertion order.
        case criticalPath
        /// Priority, then the order nodes became ready (plain FIFO), for comparison.
        case readyOrder
    }

    /// Eight bytes (payloads are `Int32`, as node indices are): a run reads the state of every
    /// dependent of every node that ends, so the array's density matters at 100k nodes and more.
    enum NodeState: Equatable, Sendable {
        case waiting(remaining: Int32)
        case ready
        case running
        case backingOff
        case succeeded
        case failed
        case cancelled
        /// Never ran because `cause` failed, was cancelled or was skipped itself.
        case skipped(cause: Int32)

        var isTerminal: Bool {
            switch self {
            case .succeeded, .failed, .cancelled, .skipped: true
            case .waiting, .ready, .running, .backingOff: false
            }
        }
    }

    enum Outcome: Sendable {
        case succeeded
        case failed
        case cancelled
    }

    /// What the runner must do after an event.
    struct Transition: Equatable, Sendable {
        /// Nodes to start now, in order.
        var launch: [Int] = []
        /// Nodes that will never run, with the node whose failure caused it.
        var skipped: [Skip] = []
        /// Running nodes to cancel (fail-fast).
        var cancelRunning: [Int] = []
        /// Nodes a node's end made ready, so that the runner can prefetch what starting them
        /// reads (see ``SchedulerStateMachine/nextReady``).
        var madeReady: [Int] = []
        /// Rate-limited resources that parked a node for want of a permit: the runner calls
        /// ``SchedulerStateMachine/permitsAvailable(_:permits:)`` once the resource's limiter
        /// grants again. Each resource is listed once until then.
        var rateWaits: [Int] = []
    }

    struct Skip: Equatable, Sendable {
        var node: Int
        var cause: Int
    }

    private(set) var blueprint: GraphBlueprint
    let order: Order
    let failurePolicy: FailurePolicy
    let limit: Int
    private(set) var states: [NodeState]
    private(set) var running = 0
    private(set) var terminalCount = 0
    private var ready = ReadyQueue()
    private var readySequence = 0
    private var resourceInUse: [Int]
    /// Per resource, ready nodes that found it full (or out of permits).
    private var parked: [[ReadyQueue.Entry]]
    /// Per resource, the permits its rate grants now as far as the machine knows (`Int.max`: no
    /// rate). Each start takes one; only ``permitsAvailable(_:permits:)`` raises it, so the
    /// count never exceeds what the limiter would grant.
    private var ratePermits: [Int]
    /// Per resource, whether the runner was asked to wake it (``Transition/rateWaits``).
    private var rateWaitArmed: [Bool]
    private var stopped = false

    init(
        _ blueprint: GraphBlueprint, limit: Int, order: Order = .criticalPath,
        failurePolicy: FailurePolicy = .cancelDependents
    ) {
        self.blueprint = blueprint
        self.order = order
        self.failurePolicy = failurePolicy
        self.limit = limit
        self.states = (0..<blueprint.count).map { .waiting(remaining: Int32(blueprint.nodes.dependencyCount(of: $0))) }
        self.resourceInUse = Array(repeating: 0, count: blueprint.resourceNames.count)
        self.parked = Array(repeating: [], count: blueprint.resourceNames.count)
        self.ratePermits = Array(repeating: .max, count: blueprint.resourceNames.count)
        self.rateWaitArmed = Array(repeating: false, count: blueprint.resourceNames.count)
    }

    /// Before the run starts: a node using `resource` starts only with one of its `permits`
    /// (a new limiter's burst), then one each time ``permitsAvailable(_:permits:)`` adds them.
    mutating func limitRate(ofResource resource: Int, permits: Int) {
        ratePermits[resource] = permits
    }

    /// Whether `resource` is rate-limited.
    func isRateLimited(_ resource: Int) -> Bool { ratePermits[resource] != .max }

    /// The rate-limited `resource` grants `permits` now (its limiter's count, which also holds
    /// the time passed since the last start): the nodes parked on it compete again.
    mutating func permitsAvailable(_ resource: Int, permits: Int) -> Transition {
        var transition = Transition()
        rateWaitArmed[resource] = false
        guard !stopped, isRateLimited(resource) else { return transition }
        ratePermits[resource] = max(permits, 0)
        for entry in parked[resource] { ready.insert(entry) }
        parked[resource].removeAll()
        fillSlots(into: &transition)
        return transition
    }

    var isFinished: Bool { terminalCount == blueprint.count }

    /// Whether the run was stopped (cancelled, or fail-fast after a failure).
    var isHalted: Bool { stopped }

    /// Makes the nodes without dependencies ready and returns what to start.
    mutating func start() -> Transition {
        for node in 0..<blueprint.count where blueprint.dependencies(of: node).isEmpty {
            makeReady(node)
        }
        var transition = Transition()
        fillSlots(into: &transition)
        return transition
    }

    /// A running node ended.
    mutating func finish(_ node: Int, _ outcome: Outcome) -> Transition {
        var transition = Transition()
        finish(node, outcome, into: &transition)
        return transition
    }

    /// A running node ended; what to do is appended to `transition` (a runner reuses one
    /// transition, so the hot path allocates nothing).
    mutating func finish(_ node: Int, _ outcome: Outcome, into transition: inout Transition) {
        precondition(
            states[node] == .running,
            "SchedulerStateMachine: node \(blueprint.id(of: node)) finished while \(states[node])")
        release(node)
        switch outcome {
        case .succeeded: settle(node, as: .succeeded, into: &transition)
        case .failed: settle(node, as: .failed, into: &transition)
        case .cancelled: settle(node, as: .cancelled, into: &transition)
        }
        if outcome == .failed, failurePolicy == .failFast {
            halt(cause: node, into: &transition)
        }
        fillSlots(into: &transition)
    }

    /// A running node failed an attempt and waits before retrying: it gives back its slot and
    /// its resources.
    mutating func suspendForBackoff(_ node: Int) -> Transition {
        precondition(
            states[node] == .running,
            "SchedulerStateMachine: node \(blueprint.id(of: node)) backed off while \(states[node])")
        release(node)
        states[node] = .backingOff
        var transition = Transition()
        fillSlots(into: &transition)
        return transition
    }

    /// A node's backoff is over: it competes for a slot again, like any ready node.
    mutating func resumeAfterBackoff(_ node: Int) -> Transition {
        var transition = Transition()
        guard states[node] == .backingOff, !stopped else { return transition }
        makeReady(node)
        fillSlots(into: &transition)
        return transition
    }

    /// Cancels one node that has not ended: if it runs, the runner cancels it and reports
    /// `.cancelled` through ``finish(_:_:)``; if it has not started, it ends now and its
    /// ordinary dependents are skipped. Its dependents are never released early.
    mutating func cancel(_ node: Int) -> Transition {
        var transition = Transition()
        switch states[node] {
        case .running:
            transition.cancelRunning = [node]
        case .waiting, .ready, .backingOff:
            removeFromQueues(node)
            settle(node, as: .cancelled, into: &transition)
            fillSlots(into: &transition)
        case .succeeded, .failed, .cancelled, .skipped:
            break
        }
        return transition
    }

    /// Stops the run (the awaiting task was cancelled): nothing new starts, every node not
    /// started is cancelled, and the running ones are returned to be cancelled.
    mutating func cancelAll() -> Transition {
        var transition = Transition()
        halt(cause: nil, into: &transition)
        return transition
    }

    /// Adds a node while the graph runs (see ``GraphBlueprint/append(_:)``). It becomes ready at
    /// once if its dependencies already succeeded, and is skipped at once if one already
    /// failed (unless it runs after any outcome).
    mutating func add(
        _ node: NodeSpec, extras: NodeExtras? = nil
    ) throws(TaskGraphError) -> (index: Int, transition: Transition) {
        let index = try blueprint.append(node, extras: extras)
        var remaining: Int32 = 0
        var failedCause: Int?
        for dependency in blueprint.dependencies(of: index).map(Int.init) {
            switch states[dependency] {
            case .succeeded: break
            case .failed, .cancelled: failedCause = failedCause ?? dependency
            case .skipped(let cause): failedCause = failedCause ?? Int(cause)
            case .waiting, .ready, .running, .backingOff: remaining += 1
            }
        }
        states.append(.waiting(remaining: remaining))
        var transition = Transition()
        if stopped {
            states[index] = .cancelled
            terminalCount += 1
        } else if let failedCause, !blueprint.runsAfterAnyOutcome(index) {
            settle(index, as: .skipped(cause: Int32(failedCause)), into: &transition)
            transition.skipped.append(Skip(node: index, cause: failedCause))
        } else if blueprint.runsAfterAnyOutcome(index) {
            // Dependencies that already ended, however, count as done.
            let open = blueprint.dependencies(of: index).filter { !states[Int($0)].isTerminal }.count
            if open == 0 { makeReady(index) } else { states[index] = .waiting(remaining: Int32(open)) }
        } else if remaining == 0 {
            makeReady(index)
        }
        fillSlots(into: &transition)
        return (index, transition)
    }

    // MARK: - Internals

    /// The ready node that starts next unless another becomes ready first: the runner
    /// prefetches its closure.
    @inline(__always) var nextReady: Int? { ready.best }

    private mutating func makeReady(_ node: Int) {
        states[node] = .ready
        blueprint.prefetchDependentRange(of: node)
        readySequence += 1
        // The longest remaining path first, or the earliest to become ready (exact as a
        // `Double` up to 2^53 insertions); ties go to the lowest node index.
        let key = order == .criticalPath ? blueprint.bottomLevels[node] : -Double(readySequence)
        ready.insert(ReadyQueue.Entry(node: node, priority: blueprint.priority(of: node), key: key))
    }

    /// Starts the best ready nodes while slots are free; parks nodes whose resources are full.
    private mutating func fillSlots(into transition: inout Transition) {
        while running < limit, !stopped, let entry = ready.popBest() {
            let resources = blueprint.resources(of: entry.node)
            if let full = resources.first(where: { resourceInUse[Int($0)] >= blueprint.resourceLimits[Int($0)] }) {
                parked[Int(full)].append(entry)
                continue
            }
            if let waiting = resources.first(where: { ratePermits[Int($0)] == 0 }) {
                let resource = Int(waiting)
                parked[resource].append(entry)
                if !rateWaitArmed[resource] {
                    rateWaitArmed[resource] = true
                    transition.rateWaits.append(resource)
                }
                continue
            }
            for resource in resources {
                resourceInUse[Int(resource)] += 1
                if ratePermits[Int(resource)] != .max { ratePermits[Int(resource)] -= 1 }
            }
            states[entry.node] = .running
            blueprint.prefetchDependents(of: entry.node)
            running += 1
            transition.launch.append(entry.node)
        }
    }

    /// Gives back a running node's slot and resources; parked nodes compete again.
    private mutating func release(_ node: Int) {
        running -= 1
        for resource in blueprint.resources(of: node).map(Int.init) {
            resourceInUse[resource] -= 1
            for entry in parked[resource] { ready.insert(entry) }
            parked[resource].removeAll()
        }
    }

    private mutating func removeFromQueues(_ node: Int) {
        guard states[node] == .ready else { return }
        ready.remove(node)
        for resource in parked.indices { parked[resource].removeAll { $0.node == node } }
    }

    /// Records a terminal state and propagates it to the dependents, breadth first.
    private mutating func settle(_ node: Int, as state: NodeState, into transition: inout Transition) {
        var pending: [(node: Int, state: NodeState)] = [(node, state)]
        while let (current, currentState) = pending.popLast() {
            states[current] = currentState
            terminalCount += 1
            let cause: Int
            switch currentState {
            case .skipped(let root): cause = Int(root)
            default: cause = current
            }
            func visit(_ dependent: Int) {
                guard case .waiting(let remaining) = states[dependent] else { return }
                if currentState == .succeeded || blueprint.runsAfterAnyOutcome(dependent) {
                    if remaining == 1, !stopped {
                        makeReady(dependent)
                        transition.madeReady.append(dependent)
                    } else {
                        states[dependent] = .waiting(remaining: remaining - 1)
                    }
                } else {
                    // Mark now so a second failed dependency does not skip it twice.
                    states[dependent] = .skipped(cause: Int32(cause))
                    transition.skipped.append(Skip(node: dependent, cause: cause))
                    pending.append((dependent, .skipped(cause: Int32(cause))))
                }
            }
            // The slices keep their own reference to the arrays, so `visit` may change `self`.
            for dependent in blueprint.directDependents(of: current) { visit(Int(dependent)) }
            if let added = blueprint.addedDependents(of: current) {
                for dependent in added { visit(Int(dependent)) }
            }
        }
    }

    /// Stops the run: nothing new starts, running nodes are returned to be cancelled, and every
    /// node not started ends: skipped because of `cause` (fail-fast), or cancelled (no cause).
    private mutating func halt(cause: Int?, into transition: inout Transition) {
        stopped = true
        for node in 0..<blueprint.count {
            switch states[node] {
            case .running:
                transition.cancelRunning.append(node)
            case .waiting, .ready, .backingOff:
                terminalCount += 1
                if let cause {
                    states[node] = .skipped(cause: Int32(cause))
                    transition.skipped.append(Skip(node: node, cause: cause))
                } else {
                    states[node] = .cancelled
                }
            case .succeeded, .failed, .cancelled, .skipped:
                break
            }
        }
        ready.removeAll()
        for resource in parked.indices { parked[resource].removeAll() }
    }
}
