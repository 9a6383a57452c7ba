extension Sequence where Element: Sendable {
    /// The sliding window behind ``concurrentMap(limit:isolation:_:)`` and
    /// ``concurrentResults(limit:isolation:_:)``: each element runs in its own child task of one
    /// task group, at most `limit` at once, and each outcome is handed to `onResult` in the
    /// caller's isolation as it arrives.
    ///
    /// If `onResult` throws, the group cancels and awaits the running children and the error is
    /// rethrown. If the calling task is cancelled, nothing new starts; the running children
    /// finish (cancelled) and the iterator positioned at the first element never started is
    /// returned.
    func slidingWindow<Output: Sendable>(
        limit: Int,
        function: StaticString,
        isolation: isolated (any Actor)?,
        transform: @escaping @Sendable (Element) async throws -> Output,
        onResult: (Int, Result<Output, any Error>) throws -> Void
    ) async throws -> Iterator? {
        checkArgument(limit >= 1, "\(function): limit must be at least 1, got \(limit)")
        return try await withThrowingTaskGroup(of: (Int, Result<Output, any Error>).self, isolation: isolation) { group in
            var iterator = makeIterator()
            var index = 0
            func startNext() -> Bool {
                guard let element = iterator.next() else { return false }
                let position = index
                index += 1
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
            while running < limit, !Task.isCancelled, startNext() { running += 1 }
            // Already cancelled before anything started: every element is unstarted.
            if running == 0, Task.isCancelled { return iterator }
            while let (position, result) = try await group.next() {
                try onResult(position, result)
                if Task.isCancelled {
                    // Drain what runs (it sees the cancellation); start nothing new.
                    while let (position, result) = try await group.next() { try onResult(position, result) }
                    return iterator
                }
                _ = startNext()
            }
            return nil
        }
    }
}
