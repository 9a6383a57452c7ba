extension Sequence where Element: Sendable {
    /// Transforms every element concurrently, at most `limit` at once, and returns the results
    /// in input order once all are done.
    ///
    /// The seeds' "run N requests in parallel, then act when all are done":
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
    public func concurrentMap<Output: Sendable>(
        limit: Int,
        isolation: isolated (any Actor)? = #isolation,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) async throws -> [Output] {
        var results: [Output?] = []
        results.reserveCapacity(underestimatedCount)
        let unstarted = try await slidingWindow(
            limit: limit,
            function: "concurrentMap(limit:_:)",
            isolation: isolation,
            transform: transform
        ) { index, result in
            if index >= results.count { results.append(contentsOf: repeatElement(nil, count: index - results.count + 1)) }
            results[index] = try result.get()
        }
        if unstarted != nil { throw CancellationError() }
        return results.map { $0! }
    }

    /// Transforms every element concurrently, at most `limit` at once, and returns every
    /// outcome, success or failure, in input order. Never throws.
    ///
    /// ```swift
    /// for (url, result) in zip(urls, await urls.concurrentResults(limit: 4) { try await download($0) }) {
    ///     if case .failure(let error) = result { log("\(url): \(error)") }
    /// }
    /// ```
    ///
    /// Each element runs in its own child task of one task group owned by this call.
    ///
    /// Cancellation: cancelling the calling task cancels the running elements and starts
    /// nothing new; elements that never started get `.failure(CancellationError())`.
    ///
    /// - Parameters:
    ///   - limit: The most elements in flight at once; must be at least 1.
    ///   - isolation: Where results are collected and the call returns; the caller's actor by
    ///     default.
    ///   - transform: The work for one element.
    public func concurrentResults<Output: Sendable>(
        limit: Int,
        isolation: isolated (any Actor)? = #isolation,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) async -> [Result<Output, any Error>] {
        var results: [Result<Output, any Error>?] = []
        results.reserveCapacity(underestimatedCount)
        func store(_ index: Int, _ result: Result<Output, any Error>) {
            if index >= results.count { results.append(contentsOf: repeatElement(nil, count: index - results.count + 1)) }
            results[index] = result
        }
        do {
            if var unstarted = try await slidingWindow(
                limit: limit,
                function: "concurrentResults(limit:_:)",
                isolation: isolation,
                transform: transform,
                onResult: store
            ) {
                while unstarted.next() != nil { results.append(.failure(CancellationError())) }
            }
        } catch {
            preconditionFailure("concurrentResults: the result handler cannot throw, but got \(error)")
        }
        return results.map { $0! }
    }
}
