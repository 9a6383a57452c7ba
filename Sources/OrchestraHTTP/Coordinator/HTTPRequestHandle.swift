import Foundation
public import HTTPTypes
import Orchestra

/// A request started on its own (as an API manager starts one), which other requests can declare
/// as a dependency and any code can await.
///
/// ```swift
/// let login = api.start(loginRequest)
/// let profile = api.start(profileRequest, after: [login])   // sent only after login returned
/// let feed = api.start(feedRequest, after: [login])
/// show(try await profile.result, try await feed.result)
/// ```
///
/// A handle keeps only its outcome once its request ended: the request's task, and with it the
/// handles it waited for, are released, so chains of handles do not keep each other alive.
///
/// Cancellation: ``cancel()`` cancels the request (and the requests started after it fail);
/// a task awaiting ``result`` that is cancelled stops waiting, and the request goes on.
public final class HTTPRequestHandle: Sendable {
    /// The request, as given (before signing).
    public let request: HTTPRequest
    private let outcome = Locked<Result<HTTPResult, any Error>?>(nil)
    private let done = AsyncEvent()
    /// The running task, dropped when it ends (`ended` set under the same lock).
    private let running = Locked<(task: Task<Void, Never>?, ended: Bool)>((nil, false))

    init(request: HTTPRequest) {
        self.request = request
    }

    /// The response, once the request has ended.
    ///
    /// - Throws: The request's error; ``HTTPDependencyError`` if a request it waited for
    ///   failed; `CancellationError` if the awaiting task is cancelled.
    public var result: HTTPResult {
        get async throws {
            try await done.wait()
            return try outcome.withLock { $0! }.get()
        }
    }

    /// Whether the request has ended.
    public var isFinished: Bool { done.isSignalled }

    /// Cancels the request; waiters get `CancellationError`.
    public func cancel() {
        running.withLock { $0.task }?.cancel()
    }

    func run(_ work: @escaping @Sendable () async throws -> HTTPResult) {
        // Unstructured on purpose: a handle outlives the code that started it (an API object
        // started separately), and the task is released once it ends.
        let started = Task { [self] in
            let result: Result<HTTPResult, any Error>
            do {
                result = .success(try await work())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            running.withLock { $0 = (nil, true) }
            done.signal()
        }
        running.withLock { if !$0.ended { $0.task = started } }
    }
}

/// A request was not sent because a request it depends on failed.
public struct HTTPDependencyError: Error, Sendable, CustomStringConvertible {
    /// The dependency's method and path.
    public var dependency: String
    /// The dependency's error.
    public var underlying: any Error

    /// Says which dependency failed and why.
    public var description: String { "not sent: the request it depends on (\(dependency)) failed: \(underlying)" }
}

extension HTTPCoordinator {
    /// Starts a request now and returns its handle; with `dependencies`, it is sent only after
    /// each of them returned a response (of any status), and fails with
    /// ``HTTPDependencyError`` if one of them failed.
    public func start(
        _ request: HTTPRequest, body: Data? = nil, priority: Int = 0, after dependencies: [HTTPRequestHandle] = []
    ) -> HTTPRequestHandle {
        let handle = HTTPRequestHandle(request: request)
        handle.run { [self] in
            for dependency in dependencies {
                do {
                    _ = try await dependency.result
                } catch is CancellationError where Task.isCancelled {
                    throw CancellationError()
                } catch {
                    throw HTTPDependencyError(
                        dependency: "\(dependency.request.method) \(dependency.request.path ?? "/")", underlying: error)
                }
            }
            return try await data(for: request, body: body, priority: priority)
        }
        return handle
    }
}
