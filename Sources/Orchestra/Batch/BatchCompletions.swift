extension Sequence where Self: Sendable, Element: Sendable {
    /// Transforms the elements concurrently, at most `limit` at once, and delivers each
    /// outcome as soon as it is ready, in completion order.
    ///
    /// Parallel, each result handled as it arrives, then one final callback:
    ///
    /// ```swift
    /// for await (index, result) in urls.completions(limit: 4, { try await download($0) }) {
    ///     show(result, at: index)        // runs in the caller's isolation, e.g. @MainActor
    /// }
    /// allDone()
    /// ```
    ///
    /// Work starts on the first `next()`. Items running plus finished-but-unconsumed never
    /// exceed `limit + buffer`. Up to `limit` worker tasks (children of one task group) each run
    /// an item, hand its result over and take the next.
    ///
    /// The input is read as the workers take elements, so a lazy sequence (a range, a
    /// `lazy.map`) is never held whole: memory is O(`limit + buffer`) whatever its length.
    ///
    /// Cancellation: dropping the iterator (leaving the loop early) or cancelling the consuming
    /// task cancels the running items and starts nothing new; the sequence then ends at once,
    /// or, with `whenCancelled: .deliverRunning`, after delivering the running items'
    /// outcomes (``BatchCancellation``).
    ///
    /// - Parameters:
    ///   - limit: The most items running at once; must be at least 1.
    ///   - buffer: How many finished results may wait for the consumer beyond `limit`;
    ///     0 by default.
    ///   - whenCancelled: What cancelling the consuming task does: end at once (the default),
    ///     or deliver the outcomes of the items that were running first.
    ///   - transform: The work for one element.
    @inlinable
    public func completions<Output: Sendable>(
        limit: Int,
        buffer: Int = 0,
        whenCancelled: BatchCancellation = .endAtOnce,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) -> BatchCompletions<Self, Output> {
        BatchCompletions(
            source: BatchStreamSource(
                base: self, limit: limit, buffer: buffer, cancellation: whenCancelled,
                function: "completions(limit:_:)", transform: transform
            ))
    }
}

/// The outcomes of a batch in completion order; see
/// ``Swift/Sequence/completions(limit:buffer:whenCancelled:_:)``.
public struct BatchCompletions<Base: Sequence & Sendable, Output: Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
    /// The position of the element in the input, and its outcome.
    public typealias Element = (index: Int, result: Result<Output, any Error>)
    /// The sequence never throws: each element carries its own result.
    public typealias Failure = Never

    @usableFromInline let source: BatchStreamSource<Base, Output>

    @inlinable
    init(source: BatchStreamSource<Base, Output>) {
        self.source = source
    }

    /// Starts the work (at most `limit` at once) on first use.
    @inlinable
    public func makeAsyncIterator() -> Iterator {
        Iterator(cursor: BatchStreamCursor(source, order: .completion))
    }

    /// Delivers the results as they arrive.
    public struct Iterator: AsyncIteratorProtocol {
        @usableFromInline let cursor: BatchStreamCursor<Base, Output>

        @inlinable
        init(cursor: BatchStreamCursor<Base, Output>) {
            self.cursor = cursor
        }

        /// The next result to arrive, or `nil` when every one has been delivered.
        @inlinable
        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }

        /// The next result to arrive, on `actor`, or `nil` when every one has been delivered.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            guard let item = await cursor.next(isolation: actor) else { return nil }
            return (item.index, item.result)
        }
    }
}
