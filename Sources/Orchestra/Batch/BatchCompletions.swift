extension Sequence where Self: Sendable, Element: Sendable {
    /// Transforms the elements concurrently, at most `limit` at once, and delivers each
    /// outcome as soon as it is ready, in completion order.
    ///
    /// The seeds' "parallel, out of order, then one final callback":
    ///
    /// ```swift
    /// for await (index, result) in urls.completions(limit: 4, { try await download($0) }) {
    ///     show(result, at: index)        // runs in the caller's isolation, e.g. @MainActor
    /// }
    /// allDone()
    /// ```
    ///
    /// Work starts on the first `next()`. Items running plus finished-but-unconsumed never
    /// exceed `limit + buffer`. Each item runs in its own child task of one task group.
    ///
    /// Cancellation: dropping the iterator (leaving the loop early) or cancelling the consuming
    /// task cancels the running items and starts nothing new; the sequence then ends.
    ///
    /// - Parameters:
    ///   - limit: The most items running at once; must be at least 1.
    ///   - buffer: How many finished results may wait for the consumer beyond `limit`;
    ///     0 by default.
    ///   - transform: The work for one element.
    public func completions<Output: Sendable>(
        limit: Int,
        buffer: Int = 0,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) -> BatchCompletions<Self, Output> {
        precondition(limit >= 1, "completions(limit:_:): limit must be at least 1, got \(limit)")
        precondition(buffer >= 0, "completions(limit:_:): buffer must be 0 or more, got \(buffer)")
        return BatchCompletions(base: self, limit: limit, buffer: buffer, transform: transform)
    }
}

/// The outcomes of a batch in completion order; see ``Swift/Sequence/completions(limit:buffer:_:)``.
public struct BatchCompletions<Base: Sequence & Sendable, Output: Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
    /// The position of the element in the input, and its outcome.
    public typealias Element = (index: Int, result: Result<Output, any Error>)
    public typealias Failure = Never

    let base: Base
    let limit: Int
    let buffer: Int
    let transform: @Sendable (Base.Element) async throws -> Output

    public func makeAsyncIterator() -> Iterator {
        Iterator(self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        private let sequence: BatchCompletions
        private let handle: BatchStreamHandle<Output>

        init(_ sequence: BatchCompletions) {
            self.sequence = sequence
            handle = BatchStreamHandle(BatchStreamStorage(
                order: .completion, limit: sequence.limit, buffer: sequence.buffer,
                function: "completions(limit:_:)"
            ))
        }

        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            handle.storage.startIfNeeded(base: sequence.base, limit: sequence.limit, transform: sequence.transform)
            guard let item = await handle.storage.next(isolation: actor) else { return nil }
            return (item.index, item.result)
        }
    }
}
