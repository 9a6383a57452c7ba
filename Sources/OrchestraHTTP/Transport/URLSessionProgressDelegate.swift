import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Orchestra

/// Streams the bodies of the requests a ``URLSessionTransport`` sends with progress: a
/// session delegate that routes each data task's callbacks to the request waiting for it
/// (`URLSession.bytes(for:)` does not exist on Linux).
final class URLSessionProgressDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: NSObject subclass; all state is behind the lock.

    struct Pending {
        var continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>
        var progress: @Sendable (Int, Int?) -> Void
        var response: HTTPURLResponse?
        var data = Data()
    }

    private let pending = Locked<[Int: Pending]>([:])

    func register(_ task: URLSessionTask, _ entry: Pending) {
        pending.withLock { $0[task.taskIdentifier] = entry }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        pending.withLock { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let report = pending.withLock { pending -> (@Sendable (Int, Int?) -> Void, Int, Int?)? in
            guard pending[dataTask.taskIdentifier] != nil else { return nil }
            pending[dataTask.taskIdentifier]!.data.append(data)
            let entry = pending[dataTask.taskIdentifier]!
            let expected = entry.response.map { $0.expectedContentLength }.flatMap { $0 >= 0 ? Int($0) : nil }
            return (entry.progress, entry.data.count, expected)
        }
        if let (progress, received, expected) = report { progress(received, expected) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            entry.continuation.resume(throwing: error)
        } else if let response = entry.response {
            entry.continuation.resume(returning: (response, entry.data))
        } else {
            entry.continuation.resume(throwing: HTTPTransportError("\(task.originalRequest?.url?.absoluteString ?? "request"): the response is not an HTTP response"))
        }
    }
}
