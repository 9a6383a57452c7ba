extension Sequence where Element: Sendable {
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
    @inlinable
    public func concurrentResults<Output: Sendable>(
        limit: Int,
        isolation: isolated (any Actor)? = #isolation,
        _ transform: @escaping @Sendable (Element) async throws -> Output
    ) async -> [Result<Output, any Error>] {
        checkArgument(limit >= 1, "concurrentResults(limit:_:): limit must be at least 1, got \(limit)")
        return await withTaskGroup(of: (Int, Result<Output, any Error>).self, isolation: isolation) { group in
            var results: [Result<Output, any Error>?] = []
            results.reserveCapacity(underestimatedCount)
            var iterator = makeIterator()
            // Every child returns its outcome, so nothing here throws. When the caller is
            // cancelled nothing new starts, and each element never started is recorded as
            // cancelled: the array always has one outcome per input.
            func startNext() -> Bool {
                guard let element = iterator.next() else { return false }
                let position = results.count
                results.append(nil)
                guard !Task.isCancelled else {
                    results[position] = .failure(CancellationError())
                    return true
                }
                group.addTask {
                    do {
                        return (position, .success(try await transform(element)))
                    } catch {
                        return (position, .failure(error))
                    }
                }
                return true
            }
            var running = 0
            while running < limit, startNext() {
                if results.last! == nil { running += 1 }
            }
            while let (position, result) = await group.next() {
                results[position] = result
                // Start the next element; elements marked cancelled take no slot.
                while startNext(), results.last! != nil {}
            }
            return results.map { $0! }
        }
    }
}
