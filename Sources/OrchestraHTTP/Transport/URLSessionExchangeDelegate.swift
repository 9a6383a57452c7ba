import Foundation
import Orchestra

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of a ``URLSessionTransport``'s session: it routes each data task's callbacks
/// to the request waiting for it (streaming the body, with progress: `URLSession.bytes(for:)`
/// does not exist on Linux), and makes the session return every response as it is.
///
/// - Redirects are not followed: `willPerformHTTPRedirection` completes with `nil`, so the
///   3xx comes back with its `Location` and body.
/// - The body is counted as it arrives, decoded (URLSession inflates a `gzip`, `deflate` or
///   `br` body before the delegate sees it): past the exchange's `limit`, the task is
///   cancelled and the request fails with `HTTPTransportError` (`.responseTooLarge`), so a
///   small compressed body that inflates to gigabytes costs at most `limit` bytes.
/// - Authentication challenges are not answered. On Linux, URLSession's default handling of a
///   `WWW-Authenticate: Basic` challenge never completes the task (it hangs until the
///   request's timeout); the delegate ends the request with the challenge's 401 response and
///   the body already received, then cancels the challenge. On Apple platforms, default
///   handling with no credential storage returns the 401, and TLS challenges (server trust,
///   client certificates) get the system's checks.
final class URLSessionExchangeDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: NSObject subclass; all state is behind the lock.

    /// A request waiting for its task.
    struct Exchange {
        var continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>
        var progress: (@Sendable (Int, Int?) -> Void)?
        /// The most body bytes accepted, decoded.
        var limit: Int
        /// The request's authority, for the message past the limit.
        var authority: String?
        var response: HTTPURLResponse?
        var data = Data()
    }

    /// What a part of the body does to its exchange.
    private enum Received {
        case progress(@Sendable (Int, Int?) -> Void, Int, Int?)
        case tooLarge(Exchange)
        case nothing
    }

    private let exchanges = Locked<[Int: Exchange]>([:])

    /// Routes `task`'s callbacks to `exchange`; call before resuming the task.
    func register(_ task: URLSessionTask, _ exchange: Exchange) {
        exchanges.withLock { $0[task.taskIdentifier] = exchange }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        exchanges.withLock { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let received = exchanges.withLock { exchanges -> Received in
            // No copy of the exchange may live across the append: its body would then have two
            // owners, and every part would copy the whole body received so far (quadratic: an
            // endless body then piled up gigabytes of parts in URLSession's delegate queue).
            guard let received = exchanges[dataTask.taskIdentifier]?.data.count,
                let limit = exchanges[dataTask.taskIdentifier]?.limit
            else { return .nothing }
            guard received + data.count <= limit else {
                // Past the limit: the exchange ends here; the task's completion finds none.
                return .tooLarge(exchanges.removeValue(forKey: dataTask.taskIdentifier)!)
            }
            exchanges[dataTask.taskIdentifier]!.data.append(data)
            guard let progress = exchanges[dataTask.taskIdentifier]!.progress else { return .nothing }
            let expected = exchanges[dataTask.taskIdentifier]!.response.map(\.expectedContentLength).flatMap {
                $0 >= 0 ? Int($0) : nil
            }
            return .progress(progress, received + data.count, expected)
        }
        // User code and the continuation: after the lock is released.
        switch received {
        case .progress(let progress, let count, let expected):
            progress(count, expected)
        case .tooLarge(let exchange):
            dataTask.cancel()
            exchange.continuation.resume(
                throwing: HTTPTransportError(
                    code: .responseTooLarge,
                    message:
                        "the response from \(exchange.authority ?? "the server") is larger than \(exchange.limit) bytes",
                    host: exchange.authority))
        case .nothing:
            break
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        #if canImport(FoundationNetworking)
        // Linux's URLSession asks only for HTTP authentication (curl checks certificates).
        // The body was delivered before the challenge (the delegate queue is serial).
        if let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
            if let response = (challenge.failureResponse as? HTTPURLResponse) ?? exchange.response {
                exchange.continuation.resume(returning: (response, exchange.data))
            } else {
                exchange.continuation.resume(throwing: URLError(.badServerResponse))
            }
        }
        // Ends the task; its completion then finds no exchange.
        completionHandler(.cancelAuthenticationChallenge, nil)
        #else
        // With no credential storage, default handling returns the 401; TLS challenges get
        // the system's checks.
        completionHandler(.performDefaultHandling, nil)
        #endif
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            exchange.continuation.resume(throwing: error)
        } else if let response = exchange.response {
            exchange.continuation.resume(returning: (response, exchange.data))
        } else {
            exchange.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }
}
