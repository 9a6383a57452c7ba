import Foundation
import Orchestra

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A data task carried across queues (URLSessionTask is thread-safe but not declared Sendable
/// on Linux).
struct SendableTask: @unchecked Sendable {
    let task: URLSessionTask
    init(_ task: URLSessionTask) { self.task = task }

    /// Cancels the task without waiting: on Linux, `URLSessionTask.cancel()` waits for the
    /// session's queue, which must never be waited for from the delegate's queue (which the
    /// session's queue waits for, see ``InlineDelegateQueue``) or while holding a lock that
    /// code there needs (a Swift task's cancellation handler holds its task's lock, which
    /// resuming that task's continuation takes).
    func cancelWithoutWaiting() {
        #if canImport(FoundationNetworking)
        DispatchQueue.global().async { task.cancel() }
        #else
        task.cancel()
        #endif
    }
}

#if canImport(FoundationNetworking)
/// The delegate queue of a ``URLSessionTransport``'s session on Linux: it hands each callback
/// to a serial queue of its own and waits there, on the session's queue (inside curl's
/// callback, where curl reads and inflates the body), until the delegate has taken what the
/// callback brings: a part of the body is counted (or dropped past the limit) before curl
/// produces the next one.
///
/// Why: Linux's URLSession cannot pause a transfer; curl reads and inflates a body as fast as
/// it arrives and the session queues every 16 KB part for the delegate. Behind a plain queue, a
/// gzip body that inflates to gigabytes piled up all of them before the delegate counted past
/// the limit (BENCHMARKS.md#hostile-servers-and-files). Handed over one at a time, memory stays
/// at the limit, and at the limit the transfer is paused from curl's callback
/// (``CurlTransfer/pauseReceiving(_:)``).
///
/// Why not simply run each callback inline, on the session's queue: the callbacks are
/// URLSession's code around the delegate's. `cancel()` schedules the task's failure on the
/// task's own queue; a completion run at once on the session's queue schedules the task's
/// removal from the session's registry there, which can run first, and the failure then looks
/// for the task in the registry and crashes the process ("Trying to access a behaviour for a
/// task that in not in the registry"). So the session's
/// queue waits only for the part of a callback that takes the body: a callback that brings
/// none (a response, a redirect, a challenge, a completion) releases it on entry
/// (``releaseTheSession()``), and the rest runs on this queue, after the session's queue has
/// moved on, as with URLSession's own delegate queue.
///
/// Nothing run here may wait for the session's queue (which waits for this one): the delegate
/// counts and stores under its lock, and what can wait or run user code goes elsewhere.
final class InlineDelegateQueue: OperationQueue, @unchecked Sendable {
    // @unchecked: its state is behind the lock.

    /// The callback being handed over, while the session's queue waits for it.
    private final class Handoff: @unchecked Sendable {
        // @unchecked: a semaphore, and the state behind `InlineDelegateQueue.current`'s lock.
        let released = DispatchSemaphore(value: 0)
        var isReleased = false
        /// The task whose transfer to pause once released, from curl's callback.
        var pause: URLSessionTask?
    }

    private let serial = DispatchQueue(label: "OrchestraHTTP.URLSessionTransport.delegate")
    private let current = Locked<Handoff?>(nil)

    override func addOperation(_ operation: Operation) {
        let operation = UncheckedOperation(operation)
        addOperation { operation.operation.start() }
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        let handoff = Handoff()
        serial.async { [current] in
            current.withLock { $0 = handoff }
            block()
            current.withLock { $0 = nil }
            Self.release(handoff)
        }
        handoff.released.wait()
        // Back on the session's queue, inside curl's callback: where a transfer can be paused.
        if let task = current.withLock({ _ in handoff.pause }) {
            CurlTransfer.pauseReceiving(task)
        }
    }

    /// Lets the session's queue go on: for a callback that brings no part of the body.
    func releaseTheSession() {
        if let handoff = current.withLock({ $0 }) { Self.release(handoff) }
    }

    /// Asks for `task`'s transfer to be paused when the session's queue goes on (from a
    /// callback that brings a part of the body).
    func pauseReceiving(_ task: URLSessionTask) {
        current.withLock { $0?.pause = task }
    }

    private static func release(_ handoff: Handoff) {
        // The handoff's flag is read and set on this queue only (one callback at a time).
        guard !handoff.isReleased else { return }
        handoff.isReleased = true
        handoff.released.signal()
    }

    private struct UncheckedOperation: @unchecked Sendable {
        let operation: Operation
        init(_ operation: Operation) { self.operation = operation }
    }
}

/// Pauses the curl transfer behind a data task of Linux's URLSession, from a callback of that
/// transfer.
///
/// Why: cancelling the task waits for the session's queue, which curl holds for as long as data
/// keeps arriving: against a gzip bomb, or any body that keeps coming, the cancellation landed
/// only after curl had read and inflated all of it (seconds to minutes of a core after the
/// request had failed), and every other request of the process waited behind it. Paused, curl
/// stops reading at once, returns the queue, and the cancellation that follows closes the
/// connection.
///
/// URLSession offers no way to pause; this reads the task's curl handle by reflection
/// (`_protocolStorage` → `easyHandle` → `rawHandle`) and calls libcurl's `curl_easy_pause`,
/// which libcurl allows from its own callbacks. If either is not found (another Foundation
/// version), nothing is paused: memory stays bounded all the same, but curl goes on inflating
/// what arrives until the body ends.
enum CurlTransfer {
    private typealias Pause = @convention(c) (OpaquePointer, Int32) -> Int32

    /// libcurl's `curl_easy_pause`, from the libcurl URLSession has loaded.
    private static let pause: Pause? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "curl_easy_pause") else { return nil }
        return unsafeBitCast(symbol, to: Pause.self)
    }()

    /// `CURLPAUSE_RECV`.
    private static let receive: Int32 = 1

    /// Pauses receiving on `task`'s transfer; call only from one of its callbacks (on the
    /// session's queue). Returns whether it was paused.
    @discardableResult
    static func pauseReceiving(_ task: URLSessionTask) -> Bool {
        guard let urlProtocol = urlProtocol(of: task), let handle = easyHandle(of: urlProtocol) else { return false }
        return pauseReceiving(handle)
    }

    /// Pauses receiving on the transfer of curl handle `handle`; call only from one of its
    /// callbacks (on the session's queue). Returns whether it was paused.
    @discardableResult
    static func pauseReceiving(_ handle: OpaquePointer) -> Bool {
        guard let pause else { return false }
        return pause(handle, receive) == 0
    }

    /// The URL protocol `task` loads with (`_protocolStorage`), once URLSession has made it;
    /// from the session's queue.
    static func urlProtocol(of task: URLSessionTask) -> Any? {
        guard let storage = child(task, "_protocolStorage") else { return nil }
        return Mirror(reflecting: storage).children.first.flatMap({ unwrapped($0.value) })
    }

    /// The curl handle of a URL protocol of URLSession (`easyHandle` → `rawHandle`), from any
    /// thread: it is looked for in the protocol's superclasses (`_NativeProtocol`), never read
    /// in the HTTP protocol's own properties, which its transfer writes.
    static func easyHandle(of urlProtocol: Any) -> OpaquePointer? {
        var mirror = Mirror(reflecting: urlProtocol).superclassMirror
        var easyHandle: Any?
        while let current = mirror, easyHandle == nil {
            easyHandle = current.children.first(where: { $0.label == "easyHandle" }).flatMap { unwrapped($0.value) }
            mirror = current.superclassMirror
        }
        guard let easyHandle, let raw = child(easyHandle, "rawHandle") else { return nil }
        if let pointer = raw as? OpaquePointer { return pointer }
        if let pointer = raw as? UnsafeMutableRawPointer { return OpaquePointer(pointer) }
        return nil
    }

    /// The stored property `label` of `value` or of one of its superclasses, unwrapped.
    static func child(_ value: Any, _ label: String) -> Any? {
        guard let value = unwrapped(value) else { return nil }
        var mirror: Mirror? = Mirror(reflecting: value)
        while let current = mirror {
            if let found = current.children.first(where: { $0.label == label }) { return unwrapped(found.value) }
            mirror = current.superclassMirror
        }
        return nil
    }

    /// `value` without its layers of `Optional`; nil for `nil`.
    private static func unwrapped(_ value: Any) -> Any? {
        var value = value
        while Mirror(reflecting: value).displayStyle == .optional {
            guard let wrapped = Mirror(reflecting: value).children.first?.value else { return nil }
            value = wrapped
        }
        return value
    }
}
#endif
