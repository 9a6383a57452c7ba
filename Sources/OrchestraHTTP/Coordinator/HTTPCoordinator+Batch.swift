import Foundation
public import HTTPTypes
import Orchestra

/// How far a batch of requests has got.
public struct HTTPBatchProgress: Sendable, Equatable, CustomStringConvertible {
    /// Requests that ended (with a response or an error).
    public var completed: Int
    /// Requests in the batch.
    public var total: Int

    /// `completed / total`; 1 for an empty batch.
    public var fractionCompleted: Double { total == 0 ? 1 : Double(completed) / Double(total) }
    /// `completed/total`.
    public var description: String { "\(completed)/\(total)" }
}

extension HTTPCoordinator {
    /// Sends a batch (what a hand-written batch-request class does) and returns the responses in input order,
    /// or throws the first error: the others are then cancelled (fail-fast).
    ///
    /// The coordinator's limits apply across the batch and every other request; the batch
    /// runs at most ``Configuration/maxConcurrentRequests`` tasks at once, so a batch of
    /// 10,000 requests does not make 10,000 tasks.
    ///
    /// - Parameters:
    ///   - requests: The requests; each is sent like ``data(for:body:priority:progress:)``.
    ///   - deadline: The whole batch's time limit; when it passes, the requests still running or
    ///     waiting are cancelled and the call throws a `TimeoutError`.
    ///   - progress: Called after each request ends, on the task that ended it.
    /// - Throws: The first request's error; `TimeoutError` at the deadline;
    ///   `CancellationError` if the calling task is cancelled.
    public func data(
        for requests: [HTTPRequest],
        deadline: Duration? = nil,
        progress: (@Sendable (HTTPBatchProgress) -> Void)? = nil
    ) async throws -> [HTTPResult] {
        let tracker = BatchTracker(total: requests.count, report: progress)
        let width = max(1, min(configuration.maxConcurrentRequests, requests.count))
        let batch: @Sendable () async throws -> [HTTPResult] = {
            try await requests.concurrentMap(limit: width) { request in
                defer { tracker.ended() }
                return try await self.data(for: request)
            }
        }
        guard let deadline else { return try await batch() }
        return try await timing(deadline) { try await batch() as any Sendable } as! [HTTPResult]
    }

    /// Sends a batch and returns every request's outcome in input order (collect-all): a
    /// failure does not stop the others. At the deadline, requests not yet ended are
    /// cancelled and their outcome is a `TimeoutError`.
    public func results(
        for requests: [HTTPRequest],
        deadline: Duration? = nil,
        progress: (@Sendable (HTTPBatchProgress) -> Void)? = nil
    ) async -> [Result<HTTPResult, any Error>] {
        let tracker = BatchTracker(total: requests.count, report: progress)
        let width = max(1, min(configuration.maxConcurrentRequests, requests.count))
        let outcomes = Locked([Result<HTTPResult, any Error>?](repeating: nil, count: requests.count))
        let batch: @Sendable () async -> Void = {
            _ = await Array(requests.enumerated()).concurrentResults(limit: width) { index, request in
                let outcome = await Result { try await self.data(for: request) }
                outcomes.withLock { $0[index] = outcome }
                tracker.ended()
            }
        }
        if let deadline {
            do {
                _ = try await timing(deadline) {
                    await batch()
                    // Cut short by the deadline: say so, so the timeout is reported.
                    try Task.checkCancellation()
                    return () as any Sendable
                }
            } catch is TimeoutError {
                // What the deadline cancelled (or never started) ends timed out.
                let timedOut = TimeoutError(timeout: deadline, subject: "the batch of \(requests.count) requests")
                return outcomes.withLock {
                    $0.map { outcome in
                        if let outcome, !outcome.isCancellation { return outcome }
                        return .failure(timedOut)
                    }
                }
            } catch {
                // The calling task was cancelled.
            }
        } else {
            await batch()
        }
        return outcomes.withLock { $0.map { $0 ?? .failure(CancellationError()) } }
    }
}

/// Counts the ends of a batch's requests and reports them.
private final class BatchTracker: Sendable {
    private let completed = Locked(0)
    private let total: Int
    private let report: (@Sendable (HTTPBatchProgress) -> Void)?

    init(total: Int, report: (@Sendable (HTTPBatchProgress) -> Void)?) {
        self.total = total
        self.report = report
    }

    func ended() {
        let count = completed.withLock {
            $0 += 1
            return $0
        }
        report?(HTTPBatchProgress(completed: count, total: total))
    }
}

extension Result where Failure == any Error {
    var isCancellation: Bool {
        if case .failure(let error) = self { return error is CancellationError }
        return false
    }
}
