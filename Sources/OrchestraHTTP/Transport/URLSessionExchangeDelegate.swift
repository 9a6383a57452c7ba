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
///   `br` body before the delegate sees it): past the exchange's `limit`, the request fails
///   with `HTTPTransportError` (`.responseTooLarge`) and the task is cancelled, so a small
///   compressed body that inflates to gigabytes costs at most `limit` bytes. On Linux the
///   session waits for the delegate to take each part (``InlineDelegateQueue``), so each part
///   is counted before curl produces the next, and the transfer is paused at the limit
///   (``CurlTransfer/pauseReceiving(_:)``).
/// - Authentication challenges are not answered. On Linux, URLSession's default handling of a
///   `WWW-Authenticate: Basic` challenge never completes the task (it hangs until the
///   request's timeout); the delegate ends the request with the challenge's 401 response and
///   the body already received, then cancels the challenge. On Apple platforms, default
///   handling with no credential storage returns the 401, and TLS challenges (server trust,
///   client certificates) get the system's checks.
///
/// On Linux the session's queue waits while a callback brings a part of the body, so nothing
/// here waits for it: resuming a request and calling its `progress` run on ``callbacks``, one
/// call at a time, in the order of the callbacks; cancelling a task or answering a challenge
/// runs on a global queue (see ``SendableTask/cancelWithoutWaiting()``).
final class URLSessionExchangeDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: NSObject subclass; all state is behind the lock.

    private let state = Locked(URLSessionExchanges())

    #if canImport(FoundationNetworking)
    /// Where the requests' continuations are resumed and their `progress` called, in order.
    private let callbacks = DispatchQueue(label: "OrchestraHTTP.URLSessionTransport.callbacks")
    #endif

    /// Body bytes URLSession delivered for requests that had already ended.
    var bytesAfterTheEnd: Int { state.withLock { $0.bytesAfterTheEnd } }

    /// Tasks resumed whose completion URLSession has not delivered yet.
    var transfersInProgress: Int { state.withLock { $0.transfers.count } }

    /// Makes `task` known before its request can be cancelled; then call ``start(_:_:)``.
    func prepare(_ task: SendableTask) {
        state.withLock { $0.prepare(task.task.taskIdentifier) }
    }

    /// Routes `task`'s callbacks to `exchange` and resumes the task; if the request was
    /// cancelled since ``prepare(_:)``, cancels the task once resumed; if the task completed
    /// already, resumes the request with its outcome.
    func start(_ task: SendableTask, _ exchange: URLSessionExchanges.Exchange, options: CurlOptions) {
        let limit = exchange.limit
        switch state.withLock({ $0.start(task.task.taskIdentifier, exchange) }) {
        case .resume:
            resume(task, limitingRedirectBodyTo: limit, options: options)
        case .resumeAndCancel:
            resume(task, limitingRedirectBodyTo: limit, options: options)
            task.cancelWithoutWaiting()
        case .deliver(let resumption):
            deliver(resumption)
        }
    }

    /// The request of `task` is cancelled: its task is cancelled (now, or once resumed), and
    /// the task's completion resumes the request. Never waits: this runs in a cancellation
    /// handler, holding the calling task's lock.
    func cancel(_ task: SendableTask) {
        if state.withLock({ $0.cancel(task.task.taskIdentifier) }) {
            task.cancelWithoutWaiting()
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        releaseTheSession(session)
        let sink = state.withLock { $0.receive(response as? HTTPURLResponse, for: dataTask.taskIdentifier) }
        if let sink {
            do {
                try sink.begin()
            } catch {
                fail(dataTask, of: session, with: error)
            }
        }
        // On Linux the handler only schedules work on the session's queue: it does not wait.
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let received = state.withLock { $0.receive(data, for: dataTask.taskIdentifier) }
        // User code and the continuation: after the lock is released, off the session's queue.
        switch received {
        case .nothing:
            break
        case .progress(let progress, let count, let expected):
            callbacksAsync { progress(count, expected) }
        case .write(let sink, let progress, let count, let expected):
            // On the session's queue, one part at a time: on Linux curl waits for it.
            do {
                try data.withUnsafeBytes { try sink.write($0) }
            } catch {
                fail(dataTask, of: session, with: error)
                return
            }
            if let progress { callbacksAsync { progress(count, expected) } }
        case .tooLarge(let resumption):
            stopReceiving(dataTask, of: session)
            deliver(resumption)
            SendableTask(dataTask).cancelWithoutWaiting()
        case .ended:
            // The request ended and its task's cancellation is on its way: nothing more is read
            // meanwhile.
            stopReceiving(dataTask, of: session)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        releaseTheSession(session)
        // On Linux the handler only schedules work on the session's queue: it does not wait.
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        releaseTheSession(session)
        #if canImport(FoundationNetworking)
        // Linux's URLSession asks only for HTTP authentication (curl checks certificates).
        // The body was delivered before the challenge (callbacks come in order).
        let failureResponse = challenge.failureResponse as? HTTPURLResponse
        if let resumption = state.withLock({ $0.challenge(for: task.taskIdentifier, failureResponse: failureResponse) })
        {
            deliver(resumption)
        }
        // Ends the task (its completion then finds no request). Cancelling the challenge
        // cancels the task, which waits for the session's queue: not from here.
        DispatchQueue.global().async { completionHandler(.cancelAuthenticationChallenge, nil) }
        #else
        // With no credential storage, default handling returns the 401; TLS challenges get
        // the system's checks.
        completionHandler(.performDefaultHandling, nil)
        #endif
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        releaseTheSession(session)
        #if canImport(FoundationNetworking)
        let ending = RedirectBodyLimit.end(task)
        var redirectBody: (status: Int, limit: Int)?
        if case .redirectBody(let stop) = ending { redirectBody = (stop.status, stop.limit) }
        let notSetUp = ending == .notSetUp
        #else
        let redirectBody: (status: Int, limit: Int)? = nil
        let notSetUp = false
        #endif
        if let resumption = state.withLock({
            $0.complete(task.taskIdentifier, error: error, redirectBody: redirectBody, notSetUp: notSetUp)
        }) {
            deliver(resumption)
        }
    }

    /// Resumes `task`, on Linux limiting the body of a 301–308 response to `limit` bytes (at
    /// most `RedirectBodyLimit.maximum`): URLSession holds it and gives the delegate none of it
    /// (see ``RedirectBodyLimit``).
    private func resume(_ task: SendableTask, limitingRedirectBodyTo limit: Int, options: CurlOptions) {
        #if canImport(FoundationNetworking)
        RedirectBodyLimit.resume(
            task.task, limitingRedirectBodyTo: min(limit, RedirectBodyLimit.maximum), options: options)
        #else
        task.task.resume()
        #endif
    }

    /// Ends the request of `dataTask` with what its sink threw, and its transfer.
    private func fail(_ dataTask: URLSessionDataTask, of session: URLSession, with error: any Error) {
        guard let resumption = state.withLock({ $0.fail(dataTask.taskIdentifier, error: error) }) else { return }
        stopReceiving(dataTask, of: session)
        deliver(resumption)
        SendableTask(dataTask).cancelWithoutWaiting()
    }

    /// Resumes a request, after the `progress` calls already scheduled.
    private func deliver(_ resumption: URLSessionExchanges.Resumption) {
        let resumption = UncheckedResumption(resumption)
        callbacksAsync { resumption.value.continuation.resume(with: resumption.value.result) }
    }

    /// Runs `work` where a request may be resumed and user code called: on Linux on
    /// ``callbacks`` (never on the session's queue), on Apple platforms at once (on the
    /// session's delegate queue).
    private func callbacksAsync(_ work: @escaping @Sendable () -> Void) {
        #if canImport(FoundationNetworking)
        callbacks.async(execute: work)
        #else
        work()
        #endif
    }

    /// Stops reading `dataTask`'s body until its cancellation lands: on Linux, once the session's
    /// queue goes on, from curl's callback; on Apple platforms the cancellation itself stops the
    /// transfer.
    private func stopReceiving(_ dataTask: URLSessionDataTask, of session: URLSession) {
        #if canImport(FoundationNetworking)
        (session.delegateQueue as? InlineDelegateQueue)?.pauseReceiving(dataTask)
        #endif
    }

    /// Lets the session's queue go on (on Linux): for a callback that brings no part of the body
    /// (see ``InlineDelegateQueue``).
    private func releaseTheSession(_ session: URLSession) {
        #if canImport(FoundationNetworking)
        (session.delegateQueue as? InlineDelegateQueue)?.releaseTheSession()
        #endif
    }
}

/// A resumption carried to the queue that performs it (its reply is handed over once).
private struct UncheckedResumption: @unchecked Sendable {
    let value: URLSessionExchanges.Resumption
    init(_ value: URLSessionExchanges.Resumption) { self.value = value }
}
