/// A child of a rate-limited `concurrentMap` or `concurrentResults`: the permit for the element
/// waiting to start, or an element's outcome.
@usableFromInline
enum PacedBatchChild<Outcome: Sendable>: Sendable {
    /// The permit for the pending element was granted (`false`: its wait was cancelled).
    case permit(granted: Bool)
    case done(position: Int, outcome: Outcome)
}

extension Sequence where Element: Sendable {
    /// Transforms every element concurrently, at most `limit` at once and at most `rate`
    /// starts per interval, and returns the results in input order once all are done.
    ///
    /// For an API that allows 20 requests a second, of which 8 may be in flight:
    ///
    /// ```swift
    /// let users = try await ids.concurrentMap(limit: 8, rate: .perSecond(20)) { id in
    ///     try await api.user(id)
    /// }
    /// ```
    ///
    /// Each element takes its slot first (one of `limit`), then its permit from a
    /// ``RateLimiter`` of `rate` and `burst` on `clock`, and starts at once when granted. Taking
    /// the slot first means a permit is never granted to an element that then waits for a slot:
    /// the starts follow the rate exactly (any window of length *W* holds at most
    /// `burst + W / rate.spacing` starts), whichever of the two limits binds. Permits go to the
    /// elements in input order; one element at a time waits for its permit, holding its slot.
    /// With `rate: nil` this is ``concurrentMap(limit:isolation:_:)``.
    ///
    /// Fail-fast and cancellation as in ``concurrentMap(limit:isolation:_:)``: the first error,
    /// or cancelling the calling task, cancels the running elements and the wait for a permit,
    /// starts nothing new and throws (`CancellationError` for a cancellation). An element
    /// granted its permit after the caller was cancelled does not start.
    ///
    /// - Parameters:
    ///   - limit: The most elements in flight at once; must be at least 1 (a smaller value traps
    ///     with a message naming it).
    ///   - rate: The most elements started per interval, e.g. `.perSecond(20)`; `nil` for no
    ///     rate.
    ///   - burst: How many elements may start at once after a quiet time (the limiter's
    ///     ``RateLimiter/burst``); 1 by default, which spaces every start. At least 1.
    ///   - clock: The clock the rate is measured on; a test passes a `ManualClock`.
    ///   - isolation: Where results are collected and the call returns; the caller's actor by
    ///     default.
    ///   - transform: The work for one element; runs concurrently with the others.
    /// - Complexity: O(n) time; memory O(limit) besides the returned array.
    @inlinable
    public func concurrentMap<Output: Sendable, C: Clock>(
        limit: Int,
        rate: Rate?,
        burst: Int = 1,
        clock: C = ContinuousClock(),
        isolation: isolated (any Actor)? = #isolation,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) async throws -> [Output] where C.Duration == Duration {
        checkArgument(limit >= 1, "concurrentMap(limit:rate:_:): limit must be at least 1, got \(limit)")
        checkArgument(burst >= 1, "concurrentMap(limit:rate:_:): burst must be at least 1, got \(burst)")
        guard let rate else { return try await concurrentMap(limit: limit, isolation: isolation, transform) }
        let limiter = RateLimiter(rate: rate, burst: burst, clock: clock)
        return try await withThrowingTaskGroup(of: PacedBatchChild<Output>.self, isolation: isolation) { group in
            var results: [Output?] = []
            results.reserveCapacity(underestimatedCount)
            var iterator = makeIterator()
            var running = 0
            // The element that holds a slot and waits for its permit (one at a time, so the
            // permits go in input order).
            var pending: Element?
            func start(_ element: Element) {
                let position = results.count
                results.append(nil)
                group.addTask { .done(position: position, outcome: try await transform(element)) }
            }
            func fill() throws {
                while pending == nil, running < limit {
                    if Task.isCancelled { throw CancellationError() }
                    guard let element = iterator.next() else { return }
                    running += 1
                    if limiter.tryAcquire() {
                        start(element)
                    } else {
                        pending = element
                        group.addTask {
                            try await limiter.acquire()
                            return .permit(granted: true)
                        }
                    }
                }
            }
            try fill()
            while let child = try await group.next() {
                switch child {
                case .permit:
                    if Task.isCancelled { throw CancellationError() }
                    start(pending!)
                    pending = nil
                case .done(let position, let value):
                    results[position] = value
                    running -= 1
                }
                try fill()
            }
            return results.map { $0! }
        }
    }

    /// Transforms every element concurrently, at most `limit` at once and at most `rate`
    /// starts per interval, and returns every outcome in input order. Never throws.
    ///
    /// ```swift
    /// let outcomes = await ids.concurrentResults(limit: 8, rate: .perMinute(600)) { try await api.user($0) }
    /// ```
    ///
    /// Each element takes its slot, then its permit, in input order, as in
    /// ``concurrentMap(limit:rate:burst:clock:isolation:_:)``; with `rate: nil` this is
    /// ``concurrentResults(limit:isolation:_:)``.
    ///
    /// Cancellation: cancelling the calling task cancels the running elements and the wait for
    /// a permit, and starts nothing new; elements that never started (the one that waited for
    /// its permit included) get `.failure(CancellationError())`.
    ///
    /// - Parameters:
    ///   - limit: The most elements in flight at once; must be at least 1.
    ///   - rate: The most elements started per interval; `nil` for no rate.
    ///   - burst: How many elements may start at once after a quiet time; at least 1.
    ///   - clock: The clock the rate is measured on.
    ///   - isolation: Where results are collected and the call returns.
    ///   - transform: The work for one element.
    @inlinable
    public func concurrentResults<Output: Sendable, C: Clock>(
        limit: Int,
        rate: Rate?,
        burst: Int = 1,
        clock: C = ContinuousClock(),
        isolation: isolated (any Actor)? = #isolation,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) async -> [Result<Output, any Error>] where C.Duration == Duration {
        checkArgument(limit >= 1, "concurrentResults(limit:rate:_:): limit must be at least 1, got \(limit)")
        checkArgument(burst >= 1, "concurrentResults(limit:rate:_:): burst must be at least 1, got \(burst)")
        guard let rate else { return await concurrentResults(limit: limit, isolation: isolation, transform) }
        let limiter = RateLimiter(rate: rate, burst: burst, clock: clock)
        typealias Outcome = Result<Output, any Error>
        return await withTaskGroup(of: PacedBatchChild<Outcome>.self, isolation: isolation) { group in
            var results: [Outcome?] = []
            results.reserveCapacity(underestimatedCount)
            var iterator = makeIterator()
            var running = 0
            var pending: (position: Int, element: Element)?
            func start(_ position: Int, _ element: Element) {
                group.addTask {
                    do {
                        return .done(position: position, outcome: .success(try await transform(element)))
                    } catch {
                        return .done(position: position, outcome: .failure(error))
                    }
                }
            }
            // Once the caller is cancelled, every element not started is recorded as cancelled:
            // the array always has one outcome per input.
            func fill() {
                while pending == nil, running < limit, let element = iterator.next() {
                    let position = results.count
                    results.append(nil)
                    guard !Task.isCancelled else {
                        results[position] = .failure(CancellationError())
                        continue
                    }
                    running += 1
                    if limiter.tryAcquire() {
                        start(position, element)
                    } else {
                        pending = (position, element)
                        group.addTask {
                            do {
                                try await limiter.acquire()
                                return .permit(granted: true)
                            } catch {
                                return .permit(granted: false)
                            }
                        }
                    }
                }
            }
            fill()
            while let child = await group.next() {
                switch child {
                case .permit(let granted):
                    let (position, element) = pending!
                    pending = nil
                    if granted, !Task.isCancelled {
                        start(position, element)
                    } else {
                        results[position] = .failure(CancellationError())
                        running -= 1
                    }
                case .done(let position, let outcome):
                    results[position] = outcome
                    running -= 1
                }
                fill()
            }
            return results.map { $0! }
        }
    }
}

extension Sequence where Self: Sendable, Element: Sendable {
    /// Transforms the elements concurrently, at most `limit` at once and at most `rate` starts
    /// per interval, and delivers each outcome as soon as it is ready, in completion order.
    ///
    /// ```swift
    /// for await (index, result) in urls.completions(limit: 8, rate: .perSecond(20), { try await download($0) }) {
    ///     show(result, at: index)
    /// }
    /// ```
    ///
    /// A worker takes its slot and its element, then waits for a permit from a ``RateLimiter``
    /// of `rate` and `burst` on `clock`, and starts the element when granted; an element never
    /// waits for a slot after its permit, so the starts follow the rate exactly. Permits go to
    /// the workers in the order they ask, which is input order except among elements taken at
    /// the same moment. With `rate: nil` this is ``completions(limit:buffer:whenCancelled:_:)``.
    ///
    /// Cancellation as in ``completions(limit:buffer:whenCancelled:_:)``. An element waiting for
    /// its permit counts as running: its wait is cancelled, and with `.deliverRunning` its
    /// outcome, `CancellationError`, is delivered.
    ///
    /// - Parameters:
    ///   - limit: The most items running (or waiting for a permit) at once; at least 1.
    ///   - rate: The most items started per interval; `nil` for no rate.
    ///   - burst: How many items may start at once after a quiet time; at least 1.
    ///   - buffer: How many finished results may wait for the consumer beyond `limit`.
    ///   - whenCancelled: What cancelling the consuming task does (``BatchCancellation``).
    ///   - clock: The clock the rate is measured on.
    ///   - transform: The work for one element.
    @inlinable
    public func completions<Output: Sendable, C: Clock>(
        limit: Int,
        rate: Rate?,
        burst: Int = 1,
        buffer: Int = 0,
        whenCancelled: BatchCancellation = .endAtOnce,
        clock: C = ContinuousClock(),
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) -> BatchCompletions<Self, Output> where C.Duration == Duration {
        BatchCompletions(
            source: BatchStreamSource(
                base: self, limit: limit, buffer: buffer, cancellation: whenCancelled,
                function: "completions(limit:rate:_:)",
                pace: BatchPace.make(rate: rate, burst: burst, clock: clock, function: "completions(limit:rate:_:)"),
                transform: transform
            ))
    }

    /// Transforms the elements concurrently, at most `limit` at once and at most `rate` starts
    /// per interval, and delivers the outcomes in input order, each as soon as it and every
    /// earlier one are done.
    ///
    /// ```swift
    /// for await result in pages.orderedResults(limit: 3, rate: .perSecond(5), { try await fetch($0) }) {
    ///     append(try result.get())
    /// }
    /// ```
    ///
    /// Slots, permits and their order as in ``completions(limit:rate:burst:buffer:whenCancelled:clock:_:)``;
    /// with `rate: nil` this is ``orderedResults(limit:buffer:_:)``. Cancellation as in
    /// ``orderedResults(limit:buffer:_:)``; a wait for a permit is cancelled with the running
    /// items.
    ///
    /// - Parameters:
    ///   - limit: The most items running (or waiting for a permit) at once; at least 1.
    ///   - rate: The most items started per interval; `nil` for no rate.
    ///   - burst: How many items may start at once after a quiet time; at least 1.
    ///   - buffer: How many finished results may wait beyond `limit`; 0 by default.
    ///   - clock: The clock the rate is measured on.
    ///   - transform: The work for one element.
    @inlinable
    public func orderedResults<Output: Sendable, C: Clock>(
        limit: Int,
        rate: Rate?,
        burst: Int = 1,
        buffer: Int = 0,
        clock: C = ContinuousClock(),
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) -> OrderedBatchResults<Self, Output> where C.Duration == Duration {
        OrderedBatchResults(
            source: BatchStreamSource(
                base: self, limit: limit, buffer: buffer, function: "orderedResults(limit:rate:_:)",
                pace: BatchPace.make(rate: rate, burst: burst, clock: clock, function: "orderedResults(limit:rate:_:)"),
                transform: transform
            ))
    }
}

/// Makes the rate limiter of one run of a batch stream (each iterator gets its own, full).
@usableFromInline
enum BatchPace {
    @inlinable
    static func make<C: Clock>(
        rate: Rate?, burst: Int, clock: C, function: StaticString
    ) -> (@Sendable () -> RateLimiter)? where C.Duration == Duration {
        checkArgument(burst >= 1, "\(function): burst must be at least 1, got \(burst)")
        guard let rate else { return nil }
        return { RateLimiter(rate: rate, burst: burst, clock: clock) }
    }
}
