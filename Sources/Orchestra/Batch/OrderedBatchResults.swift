extension Sequence where Self: Sendable, Element: Sendable {
    /// Transforms the elements concurrently, at most `limit` at once, and delivers the outcomes
    /// in input order, each as soon as it and every earlier one are done.
    ///
    /// Parallel requests handled in order (what `NSConditionLock` ordering is hand-written for):
    ///
    /// ```swift
    /// for await result in pages.orderedResults(limit: 3, { try await fetch($0) }) {
    ///     append(try result.get())       // page 1, then page 2, … whatever order they arrive in
    /// }
    /// ```
    ///
    /// Work starts on the first `next()`. Items running plus finished-but-undelivered never
    /// exceed `limit + buffer`, so item *i + limit* (with no buffer) does not start before item
    /// *i* is delivered: a slow item holds back at most `limit + buffer` results.
    ///
    /// Cancellation: dropping the iterator or cancelling the consuming task cancels the running
    /// items and starts nothing new; the sequence then ends.
    ///
    /// - Parameters:
    ///   - limit: The most items running at once; must be at least 1.
    ///   - buffer: How many finished results may wait beyond `limit`; 0 by default.
    ///   - transform: The work for one element.
    @inlinable
    public func orderedResults<Output: Sendable>(
        limit: Int,
        buffer: Int = 0,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) -> OrderedBatchResults<Self, Output> {
        OrderedBatchResults(
            source: BatchStreamSource(
                base: self, limit: limit, buffer: buffer, function: "orderedResults(limit:_:)", transform: transform
            ))
    }
}

/// The outcomes of a batch in input order; see ``Swift/Sequence/orderedResults(limit:buffer:_:)``.
public struct OrderedBatchResults<Base: Sequence & Sendable, Output: Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
    /// Each input's result, in input order.
    public typealias Element = Result<Output, any Error>
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
        Iterator(cursor: BatchStreamCursor(source, order: .input))
    }

    /// Delivers the results in input order.
    public struct Iterator: AsyncIteratorProtocol {
        @usableFromInline let cursor: BatchStreamCursor<Base, Output>

        @inlinable
        init(cursor: BatchStreamCursor<Base, Output>) {
            self.cursor = cursor
        }

        /// The next result in input order, or `nil` after the last.
        @inlinable
        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }

        /// The next result in input order, on `actor`, or `nil` after the last.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await cursor.next(isolation: actor)?.result
        }
    }
}
