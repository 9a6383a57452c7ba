import Orchestra

/// The items of a `paginate:` step on their way to the one `for_each` step that takes them,
/// as the pages arrive: the producer adds a page's items and, once ``capacity`` are waiting,
/// fetches no further page until the consumer has taken some; the consumer takes them one at
/// a time. Memory holds at most ``capacity`` items plus one page, however many pages there are.
///
/// One producer, one consumer; each end says when it is done (``finish(failure:)``,
/// ``leave()``), so neither waits for an end that has gone. Cancelling a waiting task ends its
/// wait with `CancellationError`.
final class PageChannel: Sendable {
    /// The paginated step.
    let producer: String
    /// The `for_each` step that takes its items.
    let consumer: String
    /// Items waiting beyond which the producer waits.
    let capacity: Int

    /// Why the pages ended early: the producer's step failed, or never ran.
    struct Failure: Error, Sendable, CustomStringConvertible {
        var description: String
    }

    /// The consumer takes no more items (it ended, or was skipped): further pages are not
    /// fetched.
    struct ConsumerGone: Error, Sendable {}

    private struct State {
        var items: [JSONValue] = []
        /// The next item to take in `items` (taken ones are dropped in bulk).
        var head = 0
        /// Set once the producer is done: `nil` inside for every page sent, else why not.
        var ended: Failure??
        var consumerGone = false
        var consumerWaiting: CheckedContinuation<JSONValue?, any Error>?
        var producerWaiting: CheckedContinuation<Void, any Error>?
        var waiting: Int { items.count - head }
    }

    private let state = Locked(State())

    init(producer: String, consumer: String, capacity: Int) {
        self.producer = producer
        self.consumer = consumer
        self.capacity = max(1, capacity)
    }

    /// Adds a page's items; returns once fewer than ``capacity`` are waiting.
    ///
    /// - Throws: ``ConsumerGone`` once the consumer left (nothing takes further pages);
    ///   `CancellationError` when the task is cancelled.
    func send(_ page: [JSONValue]) async throws {
        let handOver = try state.withLock { state -> (CheckedContinuation<JSONValue?, any Error>, JSONValue)? in
            if state.consumerGone { throw ConsumerGone() }
            guard !page.isEmpty else { return nil }
            state.items.append(contentsOf: page)
            guard let waiting = state.consumerWaiting else { return nil }
            state.consumerWaiting = nil
            let item = state.items[state.head]
            state.head += 1
            return (waiting, item)
        }
        if let (consumer, item) = handOver { consumer.resume(returning: item) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.consumerGone { return .failure(ConsumerGone()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    guard state.waiting >= capacity else { return .success(()) }
                    state.producerWaiting = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.producerWaiting = nil }
                return state.producerWaiting
            }?.resume(throwing: CancellationError())
        }
    }

    /// Says the producer is done: every page was sent (`failure` `nil`), or why not. Later
    /// calls change nothing.
    func finish(failure: String? = nil) {
        let consumer = state.withLock { state -> CheckedContinuation<JSONValue?, any Error>? in
            guard state.ended == nil else { return nil }
            state.ended = .some(failure.map(Failure.init))
            defer { state.consumerWaiting = nil }
            return state.consumerWaiting
        }
        if let failure {
            consumer?.resume(throwing: Failure(description: failure))
        } else {
            consumer?.resume(returning: nil)
        }
    }

    /// The next item; `nil` once every page's items were taken.
    ///
    /// - Throws: ``Failure`` when the producer ended early (the items before were taken);
    ///   `CancellationError` when the task is cancelled.
    func next() async throws -> JSONValue? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue?, any Error>) in
                let (outcome, producer) = state.withLock {
                    state -> (Result<JSONValue?, any Error>?, CheckedContinuation<Void, any Error>?) in
                    if Task.isCancelled { return (.failure(CancellationError()), nil) }
                    if state.waiting > 0 {
                        let item = state.items[state.head]
                        state.head += 1
                        // Dropped in bulk, so taking stays O(1) per item.
                        if state.head >= 1_024, state.head * 2 >= state.items.count {
                            state.items.removeFirst(state.head)
                            state.head = 0
                        }
                        var producer: CheckedContinuation<Void, any Error>?
                        if state.waiting < capacity {
                            producer = state.producerWaiting
                            state.producerWaiting = nil
                        }
                        return (.success(item), producer)
                    }
                    switch state.ended {
                    case .some(.some(let failure)): return (.failure(failure), nil)
                    case .some(.none): return (.success(nil), nil)
                    case .none:
                        state.consumerWaiting = continuation
                        return (nil, nil)
                    }
                }
                producer?.resume()
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.consumerWaiting = nil }
                return state.consumerWaiting
            }?.resume(throwing: CancellationError())
        }
    }

    /// Whether the producer waits for room (for tests).
    var isProducerWaiting: Bool { state.withLock { $0.producerWaiting != nil } }
    /// Whether the consumer waits for an item (for tests).
    var isConsumerWaiting: Bool { state.withLock { $0.consumerWaiting != nil } }

    /// Says the consumer takes no more: a producer waiting for room stops with
    /// ``ConsumerGone``, and the items waiting are dropped. Later calls change nothing.
    func leave() {
        let producer = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.consumerGone = true
            state.items = []
            state.head = 0
            defer { state.producerWaiting = nil }
            return state.producerWaiting
        }
        producer?.resume(throwing: ConsumerGone())
    }
}

/// The pages streamed in one run: by producer and by consumer.
struct PageStreams: Sendable {
    var byProducer: [String: PageChannel] = [:]
    var byConsumer: [String: PageChannel] = [:]

    /// The `paginate:` steps whose items go straight to the `for_each` step that takes them:
    /// when exactly one step reads `{{P.items}}`, as its `for_each` and nowhere else, without
    /// `needs: [P]`, and the run keeps no `--state` file (whose records are by position in a
    /// whole list). Every other reader gets the whole list once the pages have ended.
    static func plan(for workflow: Workflow, streaming: Bool, capacity: Int) -> PageStreams {
        var streams = PageStreams()
        guard streaming else { return streams }
        for producer in workflow.steps where producer.paginate?.items != nil {
            let readers = workflow.steps.filter { step in
                step.id != producer.id && step.captureReferences.contains { $0.namespace == producer.id }
            }
            guard readers.count == 1, let consumer = readers.first, !consumer.needs.contains(producer.id),
                producer.when == nil, let reference = consumer.forEach, reference.namespace == producer.id,
                reference.name == Pagination.itemsName, reference.filters.isEmpty,
                consumer.captureReferences.filter({ $0.namespace == producer.id }).count == 1,
                !workflow.reaches(producer.id, from: consumer.dependencies.filter { $0 != producer.id })
            else { continue }
            let channel = PageChannel(producer: producer.id, consumer: consumer.id, capacity: capacity)
            streams.byProducer[producer.id] = channel
            streams.byConsumer[consumer.id] = channel
        }
        return streams
    }

    /// What the graph makes `step` wait for: a consumer waits for what its producer waits
    /// for (and its own other dependencies), not for the producer's end.
    func dependencies(of step: WorkflowStep, in workflow: Workflow) -> [String] {
        guard let channel = byConsumer[step.id] else { return step.dependencies }
        var seen: Set<String> = []
        let producer = workflow.step(channel.producer)?.dependencies ?? []
        return (step.dependencies.filter { $0 != channel.producer } + producer).filter { seen.insert($0).inserted }
    }
}

extension Workflow {
    /// Whether `target` is among `starts` or what they depend on, at any depth: a step that
    /// waits for `target` through another step cannot take its items as they arrive (`target`
    /// would wait for it to take them, and it for `target` to end).
    func reaches(_ target: String, from starts: [String]) -> Bool {
        var seen: Set<String> = []
        var pending = starts
        while let id = pending.popLast() {
            if id == target { return true }
            guard seen.insert(id).inserted, let step = step(id) else { continue }
            pending += step.dependencies
        }
        return false
    }
}
