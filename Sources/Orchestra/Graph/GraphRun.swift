/// A running graph, for observing and steering it while it goes; given to the body of
/// ``TaskGraph/withRun(limit:resourceLimits:rateLimits:rateBurst:failurePolicy:eventBuffer:clock:isolation:_:)``, and
/// to the nodes of such a run as ``GraphRun/current``.
///
/// ```swift
/// let result = try await graph.withRun(limit: 4) { run in
///     Task { for await event in run.events { log(event) } }   // or iterate in a child task
///     return try await run.result
/// }
/// ```
public final class GraphRun: Sendable {
    /// The run that the current node belongs to; `nil` outside a node of a
    /// ``TaskGraph/withRun(limit:resourceLimits:rateLimits:rateBurst:failurePolicy:eventBuffer:clock:isolation:_:)``.
    /// A node uses it to add its follow-up steps.
    @TaskLocal public static var current: GraphRun?

    /// What happened to the nodes, in order. The buffer is bounded (the newest events are kept,
    /// the oldest dropped), so a slow reader never holds back the scheduler. The sequence ends
    /// when the run ends. Iterate it from one task only.
    public let events: AsyncStream<GraphEvent>

    let inbox = GraphRunInbox()
    let eventSink: AsyncStream<GraphEvent>.Continuation
    private let state = Locked(State())
    private let finished = AsyncEvent()

    private struct State {
        var progress = GraphProgress(completed: 0, total: 0, running: 0)
        var result: Result<GraphResult, any Error>?
    }

    init(eventBuffer: Int) {
        (events, eventSink) = AsyncStream.makeStream(
            of: GraphEvent.self, bufferingPolicy: .bufferingNewest(eventBuffer))
    }

    /// The progress now: nodes ended, nodes in all, nodes running.
    public var progress: GraphProgress {
        state.withLock { $0.progress }
    }

    /// Waits for the run to end and returns every node's outcome.
    ///
    /// - Throws: What ``TaskGraph/run(limit:resourceLimits:rateLimits:rateBurst:failurePolicy:clock:)`` throws;
    ///   `CancellationError` if the task awaiting this is cancelled first (the run goes on).
    public var result: GraphResult {
        get async throws {
            try await finished.wait()
            return try state.withLock { $0.result! }.get()
        }
    }

    /// Cancels a node: if it runs, it is cancelled; if it has not started, it never will.
    /// Its dependents are skipped; they are never released early. Ignored for a node that
    /// already ended or is not in the graph.
    public func cancel<Value>(_ node: Node<Value>) {
        cancel(id: node.id)
    }

    /// Cancels the node with this id; see ``cancel(_:)``.
    public func cancel(id: String) {
        inbox.send(.cancel(id: id))
    }

    /// Adds a node while the graph runs; it may depend only on nodes already in the graph, so
    /// it cannot close a cycle. A node can add its follow-up through ``GraphRun/current``.
    ///
    /// - Throws: ``TaskGraphError`` for a duplicate id, an unknown dependency, a bad cost or a
    ///   resource without a limit; `CancellationError` if the run has ended.
    @discardableResult
    public func add<each Dependency: Sendable, Value: Sendable>(
        _ id: String,
        after dependencies: repeat Node<each Dependency>,
        cost: Double = 1,
        priority: Int = 0,
        timeout: Duration? = nil,
        retry: RetryPolicy = .never,
        resources: [String] = [],
        operation: @escaping @Sendable (repeat each Dependency) async throws -> Value
    ) async throws -> Node<Value> {
        try await add(
            TaskGraph.definition(
                id, after: repeat each dependencies,
                options: NodeOptions(
                    cost: cost, priority: priority, timeout: timeout, retry: retry, resources: resources),
                operation: operation
            ))
        return Node(id: id)
    }

    /// Adds a node by id while the graph runs; see ``add(_:after:cost:priority:timeout:retry:resources:operation:)``.
    public func add<Value: Sendable>(
        id: String,
        dependsOn dependencies: [String] = [],
        options: NodeOptions = NodeOptions(),
        operation: @escaping @Sendable (NodeInputs) async throws -> Value
    ) async throws {
        try await add(
            TaskGraph.Definition(
                id: id, dependencies: dependencies, options: options, runsAfterAnyOutcome: false, body: operation))
    }

    private func add(_ definition: TaskGraph.Definition) async throws {
        let reply = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<TaskGraphError?, any Error>) in
            if !inbox.send(.add(definition, reply: continuation)) {
                continuation.resume(throwing: CancellationError())
            }
        }
        if let reply { throw reply }
    }

    // MARK: - Runner side

    func update(progress: GraphProgress) {
        state.withLock { $0.progress = progress }
    }

    func finish(with result: Result<GraphResult, any Error>) {
        state.withLock { $0.result = result }
        eventSink.finish()
        for command in inbox.close() {
            if case .add(_, let reply) = command { reply.resume(throwing: CancellationError()) }
        }
        finished.signal()
    }
}

/// Commands to a run's controller, from the outside world (a ``GraphRun``) and from the run's
/// own workers, and the wake-up of the controller.
final class GraphRunInbox: Sendable {
    enum Command: Sendable {
        case cancel(id: String)
        case add(TaskGraph.Definition, reply: CheckedContinuation<TaskGraphError?, any Error>)
        /// Launches wait with no worker parked: start this many.
        case spawnWorkers(Int)
        /// A node waits out a retry backoff.
        case backoff(node: Int, delay: Duration)
        /// Nodes are parked until this rate-limited resource's limiter grants again.
        case waitForPermits(resource: Int)
        /// Fail-fast: cancel every running node.
        case stopRunningNodes
        /// Every node has ended.
        case finished
    }

    private struct State {
        var commands: [Command] = []
        var listener: CheckedContinuation<Void, Never>?
        var closed = false
    }

    private let state = Locked(State())

    /// Queues a command; `false` if the run has ended.
    @discardableResult
    func send(_ command: Command) -> Bool {
        let (accepted, listener) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.closed else { return (false, nil) }
            state.commands.append(command)
            defer { state.listener = nil }
            return (true, state.listener)
        }
        listener?.resume()
        return accepted
    }

    /// Suspends until a command is queued (or, unless `ignoringCancellation`, the listener is
    /// cancelled), then takes them all.
    func receive(ignoringCancellation: Bool = false) async -> [Command] {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if !state.commands.isEmpty || state.closed { return true }
                    if !ignoringCancellation, Task.isCancelled { return true }
                    state.listener = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            guard !ignoringCancellation else { return }
            state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.listener = nil }
                return state.listener
            }?.resume()
        }
        return state.withLock { state in
            defer { state.commands.removeAll() }
            return state.commands
        }
    }

    /// Refuses further commands and returns those not yet taken.
    func close() -> [Command] {
        let (left, listener) = state.withLock { state -> ([Command], CheckedContinuation<Void, Never>?) in
            state.closed = true
            defer {
                state.commands.removeAll()
                state.listener = nil
            }
            return (state.commands, state.listener)
        }
        listener?.resume()
        return left
    }
}
