extension Sequence where Element: Sendable {
    /// Transforms every element concurrently, at most `limit` at once, and returns the results
    /// in input order once all are done.
    ///
    /// Run N requests in parallel, then act when all are done (`DispatchGroup` enter/leave and
    /// `notify`, without a group to balance):
    ///
    /// ```swift
    /// let images = try await urls.concurrentMap(limit: 4) { url in
    ///     try await download(url)
    /// }
    /// ```
    ///
    /// Each element runs in its own child task of one task group owned by this call; no task
    /// outlives it. `limit: 1` runs the elements one after another, each starting only after
    /// the previous one returned.
    ///
    /// Fail-fast: the first error cancels the elements still running, starts nothing new and
    /// is thrown (errors the cancelled elements throw afterwards are ignored). Use
    /// ``concurrentResults(limit:isolation:_:)`` to collect every outcome instead.
    ///
    /// Cancellation: cancelling the calling task cancels the running elements, starts nothing
    /// new and throws `CancellationError` (or the first error an element threw).
    ///
    /// - Parameters:
    ///   - limit: The most elements in flight at once; must be at least 1 (a smaller value is a
    ///     programmer error and traps with a message naming it).
    ///   - isolation: Where results are collected and the call returns; the caller's actor by
    ///     default.
    ///   - transform: The work for one element; runs concurrently with the others.
    /// - Complexity: O(n) time; memory O(limit) besides the returned array.
    @inlinable
    public func concurrentMap<Output: Sendable>(
        limit: Int,
        isolation: isolated (any Actor)? = #isolation,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) async throws -> [Output] {
        checkArgument(limit >= 1, "concurrentMap(limit:_:): limit must be at least 1, got \(limit)")
        return try await withThrowingTaskGroup(of: (Int, Output).self, isolation: isolation) { group in
            var results: [Output?] = []
            results.reserveCapacity(underestimatedCount)
            var iterator = makeIterator()
            // Fail-fast comes from the group: the first child error leaves this closure, which
            // cancels and awaits the other children. Cancellation of the caller is checked
            // before each start, so nothing new starts and no element is silently skipped.
            func startNext() throws -> Bool {
                if Task.isCancelled { throw CancellationError() }
                guard let element = iterator.next() else { return false }
                let position = results.count
                results.append(nil)
                group.addTask { (position, try await transform(element)) }
                return true
            }
            var running = 0
            while running < limit, try startNext() { running += 1 }
            while let (position, value) = try await group.next() {
                results[position] = value
                _ = try startNext()
            }
            return results.map { $0! }
        }
    }
}
