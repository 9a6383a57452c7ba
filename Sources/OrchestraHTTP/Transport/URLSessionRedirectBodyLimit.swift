#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Orchestra

/// Stops, on Linux, the transfer of a 301–308 response whose body passes a limit.
///
/// Why: Linux's URLSession keeps the body of a 301–308 response to itself until the transfer
/// ends. It hands the delegate none of it (so the delegate's count never sees it), appends each
/// part to the whole body held so far, copying it every time (the cost grows with the square of
/// the size: 8 MiB take 2 s of a core, 64 MiB 90 s), and while the server keeps sending, curl
/// holds URLSession's one shared queue, so the task's cancellation never lands. A server that
/// sent a redirect whose body never ends held the request, past its timeout and its
/// cancellation, with a core and growing memory, for as long as it kept sending.
///
/// How: when the task is resumed, URLSession asks the session's cache (``TransferSetupCache``) for
/// a cached response just before it makes the task's curl handle; the cache answers (none) at once,
/// and the new handle gets a callback of ours that curl calls once connected, before it sends the
/// request (`CURLOPT_PREREQFUNCTION`, which URLSession does not use). From there, after URLSession
/// has configured the handle, the handle gets a progress callback of ours
/// (`CURLOPT_XFERINFOFUNCTION`; URLSession switches curl's progress off and uses none), which curl
/// calls from the transfer as data arrives, and a debug callback of ours reads the response's
/// status line, to have a 301–308 body delivered as sent (not decompressed: see `status`). All of
/// it runs on URLSession's queue, as URLSession's own use of the handle does. (Set up from a block
/// queued after `resume()`, it came too late in about 1 request of 10: the transfer had started,
/// and the queue was held by it until its end.) With a 301–308 status and more than `limit` body
/// bytes received or held (decoded), the progress callback pauses the transfer
/// (`CurlTransfer.pauseReceiving(_:)`), which returns URLSession's queue, and cancels the task
/// without waiting; the cancellation lands at once, and ``end(_:)`` then tells the delegate why the
/// task ended. A task whose cancellation began already is only paused, for that cancellation to
/// land (left running, the body ended when the server stopped, after the cancellation had ended the
/// task, and URLSession crashed: "Received callback for HTTP redirection, but we're not waiting for
/// it").
///
/// Why not end the transfer from the callback (a non-zero return): the task would then complete
/// by itself while a cancellation may wait for URLSession's queue; that cancellation, finding
/// the task not yet marked completed, would end it a second time, after it left URLSession's
/// registry, which crashes the process (see ``InlineDelegateQueue``). Paused and cancelled,
/// the task ends as any request past its limit does.
///
/// If the task's curl handle or libcurl's functions are not found (another Foundation version),
/// nothing is limited: the body is held until the server stops, as before.
enum RedirectBodyLimit {
    /// The most body bytes of a 301–308 response on Linux, whatever the transport's
    /// `maximumBodySize` (if larger): held whole and copied on every part, 1 MiB costs about
    /// 0.06 s and 36 MB; 8 MiB would cost 2 s, 64 MiB 90 s.
    static let maximum = 1 << 20

    /// How a transfer was stopped at its limit.
    struct Stop: Sendable, Equatable {
        /// The response's status code.
        var status: Int
        /// The limit its body passed.
        var limit: Int
    }

    /// A task's place in the registry.
    private enum Entry: @unchecked Sendable {
        // @unchecked: the task and its protocol are used on URLSession's queue only (the
        // protocol's body is read there, by curl's callbacks), the task's state through its
        // own lock.
        /// Being resumed, to be set up with `limit` and `options`.
        case resuming(limit: Int, options: CurlOptions)
        /// Its handle could not be given `options`: its cancellation is on its way.
        case notSetUp
        /// curl calls the callbacks for it.
        case watched(Watched)
    }

    /// A transfer curl calls the callbacks for.
    private struct Watched {
        var task: URLSessionTask
        var urlProtocol: AnyObject
        var handle: OpaquePointer
        var limit: Int
        /// Whether curl decodes the body.
        var decodes = true
        /// Paused at the limit: the progress callback has nothing more to do.
        var paused = false
        /// Set when the progress callback cancelled the task at the limit.
        var stop: Stop?
    }

    /// The tasks watched, by the address of their task (curl hands it back to the callbacks).
    private static let entries = Locked<[UInt: Entry]>([:])

    /// Resumes `task`, limiting the body of its response, if it is a 301–308, to `limit`
    /// bytes; call ``end(_:)`` at the task's completion. The session's cache must be a
    /// ``TransferSetupCache``: while `resume()` runs, it calls ``setUp(_:)``.
    static func resume(_ task: URLSessionTask, limitingRedirectBodyTo limit: Int, options: CurlOptions) {
        let key = key(of: task)
        entries.withLock { $0[key] = .resuming(limit: limit, options: options) }
        task.resume()
        let notSetUp = entries.withLock { entries in
            // Not set up (another cache): not watched.
            guard case .resuming = entries[key] else { return false }
            if options.isEmpty {
                entries[key] = nil
                return false
            }
            entries[key] = .notSetUp
            return true
        }
        if notSetUp { SendableTask(task).cancelWithoutWaiting() }
    }

    /// Sets up the curl handle of `task`, being resumed, whose URL protocol (and handle) was
    /// just made: on the session's queue, before URLSession configures the handle and starts
    /// the transfer.
    static func setUp(_ task: URLSessionTask) {
        let key = key(of: task)
        guard case .resuming(let limit, let options) = entries.withLock({ $0[key] }) else { return }
        guard let curl = Curl.functions, let urlProtocol = CurlTransfer.urlProtocol(of: task),
            let handle = CurlTransfer.easyHandle(of: urlProtocol)
        else {
            // Options that cannot be set must not be dropped: the task is cancelled instead
            // (by resume(_:limitingRedirectBodyTo:options:), once resume() returns).
            return
        }
        for (option, value) in options.strings where value.withCString({ curl.setString(handle, option, $0) }) != 0 {
            return
        }
        for (option, value) in options.longs where curl.setLong(handle, option, value) != 0 {
            return
        }
        // A URL to an IPv6 address: curl is given the real one (see IPLiteralURL).
        guard IPLiteralURL.setUp(task, handle: handle, curl: curl) else { return }
        entries.withLock {
            $0[key] = .watched(
                Watched(
                    task: task, urlProtocol: urlProtocol as AnyObject, handle: handle, limit: limit,
                    decodes: options.decodes))
        }
        // URLSession configures the handle after this, switching curl's progress off: the
        // progress callback is set up once connected.
        _ = curl.setPointer(handle, Curl.prereqData, UnsafeMutableRawPointer(bitPattern: key))
        _ = curl.setPointer(handle, Curl.prereqFunction, unsafeBitCast(connected, to: UnsafeMutableRawPointer.self))
    }

    /// How a task's transfer was stopped by this type.
    enum Ending: Sendable, Equatable {
        /// At the limit of a 301–308 body.
        case redirectBody(Stop)
        /// Before it started: its handle could not be given the transport's settings.
        case notSetUp
    }

    /// Forgets `task`, which completed; returns how its transfer was stopped here, if it was.
    static func end(_ task: URLSessionTask) -> Ending? {
        IPLiteralURL.end(task)
        let key = key(of: task)
        return entries.withLock { entries in
            switch entries.removeValue(forKey: key) {
            case .notSetUp: return .notSetUp
            case .watched(let watched): return watched.stop.map(Ending.redirectBody)
            case .resuming, nil: return nil
            }
        }
    }

    private static func key(of task: URLSessionTask) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(task).toOpaque())
    }

    /// curl's callback once connected, before the request is sent (on URLSession's queue,
    /// after it configured the handle): sets up the progress callback, and the debug callback
    /// that reads the status line (zero: go on).
    private static let connected: Curl.Prereq = { clientp, _, _, _, _ in
        let key = UInt(bitPattern: clientp)
        guard let curl = Curl.functions, case .watched(let watched) = entries.withLock({ $0[key] }) else { return 0 }
        if !watched.decodes { _ = curl.setLong(watched.handle, Curl.contentDecoding, 0) }
        _ = curl.setPointer(watched.handle, Curl.xferInfoData, clientp)
        _ = curl.setPointer(
            watched.handle, Curl.xferInfoFunction, unsafeBitCast(progress, to: UnsafeMutableRawPointer.self))
        _ = curl.setLong(watched.handle, Curl.noProgress, 0)
        // Unless URLSession's own curl debugging is on (URLSessionDebugLibcurl), which uses them.
        if !libcurlDebugging {
            _ = curl.setPointer(
                watched.handle, Curl.debugFunction, unsafeBitCast(status, to: UnsafeMutableRawPointer.self))
            _ = curl.setLong(watched.handle, Curl.verbose, 1)
        }
        return 0
    }

    private static let libcurlDebugging = ProcessInfo.processInfo.environment["URLSessionDebugLibcurl"] != nil

    /// curl's debug callback, from the request until the status line of the response: a
    /// 301–308's body is delivered as sent, not decompressed. Why: curl inflates a compressed
    /// body 16 KB read at a time before anything can count it, and URLSession copies what it
    /// holds on every 16 KB part it inflates: a gzip bomb sent as a redirect's body inflated
    /// to gigabytes in a single read loop, at a cost growing with the square of its size, before
    /// the progress callback could see it. As sent, it is counted as it arrives.
    private static let status: Curl.Debug = { handle, type, data, size, _ in
        guard let curl = Curl.functions, let handle, type == Curl.headerIn, let data else { return 0 }
        // A status line: "HTTP/1.1 302 Found", "HTTP/2 302".
        let line = UnsafeRawBufferPointer(start: data, count: min(size, 64))
        guard line.starts(with: "HTTP/".utf8), let space = line.firstIndex(of: UInt8(ascii: " ")),
            space + 3 < line.count
        else { return 0 }
        let digits = line[(space + 1)..<(space + 4)]
        guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return 0 }
        let code = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        // An interim response (100 Continue): the final one follows.
        guard !(100...199).contains(code) else { return 0 }
        if (301...308).contains(code) { _ = curl.setLong(handle, Curl.contentDecoding, 0) }
        _ = curl.setLong(handle, Curl.verbose, 0)
        return 0
    }

    /// curl's progress callback (zero: go on).
    private static let progress: Curl.XferInfo = { clientp, _, received, _, _ in
        check(UInt(bitPattern: clientp), received: Int(clamping: received))
        return 0
    }

    /// Pauses the transfer of the task at `key`, which received `received` body bytes (as
    /// sent), past its limit, and cancels the task if its cancellation has not begun. On
    /// URLSession's queue, from curl.
    private static func check(_ key: UInt, received: Int) {
        guard let curl = Curl.functions, case .watched(let watched) = entries.withLock({ $0[key] }),
            !watched.paused
        else { return }
        var status = 0
        guard curl.getLong(watched.handle, Curl.responseCode, &status) == 0, (301...308).contains(status) else {
            return
        }
        // What URLSession holds, decoded (read between two of its appends: curl calls this
        // between reads, never from a write).
        let held = (CurlTransfer.child(watched.urlProtocol, "lastRedirectBody") as? Data)?.count ?? 0
        guard max(received, held) > watched.limit else { return }
        let state = watched.task.state
        guard state == .running || state == .canceling else { return }
        let stop = state == .running ? Stop(status: status, limit: watched.limit) : nil
        entries.withLock { entries in
            guard case .watched(var watched) = entries[key] else { return }
            watched.paused = true
            watched.stop = stop
            entries[key] = .watched(watched)
        }
        CurlTransfer.pauseReceiving(watched.handle)
        if stop != nil { SendableTask(watched.task).cancelWithoutWaiting() }
    }
}

/// The cache of a ``URLSessionTransport``'s session on Linux: it caches nothing, and is there
/// for the moment URLSession asks it for a data task's cached response, on the session's
/// queue, just before it makes the task's curl handle and before it starts the transfer: it
/// answers at once (nothing), then sets up the handle (``RedirectBodyLimit/setUp(_:)``).
///
/// It keeps nothing on disk either: its directory is one that cannot be created.
final class TransferSetupCache: URLCache, @unchecked Sendable {
    // @unchecked: it has no state of its own.

    init() {
        super.init(memoryCapacity: 0, diskCapacity: 0, diskPath: "/dev/null/OrchestraHTTP")
    }

    override func getCachedResponse(
        for dataTask: URLSessionDataTask, completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        // Makes the task's URL protocol and curl handle, and schedules the transfer's start.
        completionHandler(nil)
        RedirectBodyLimit.setUp(dataTask)
    }

    override func cachedResponse(for request: URLRequest) -> CachedURLResponse? { nil }
    override func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {}
    override func storeCachedResponse(_ cachedResponse: CachedURLResponse, for dataTask: URLSessionDataTask) {}
    override func removeCachedResponse(for request: URLRequest) {}
    override func removeCachedResponse(for dataTask: URLSessionDataTask) {}
    override func removeAllCachedResponses() {}
    override func removeCachedResponses(since date: Date) {}
}

/// The libcurl functions and constants the limit uses, from the libcurl URLSession has loaded.
enum Curl {
    typealias Prereq =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
        ) -> Int32
    typealias XferInfo = @convention(c) (UnsafeMutableRawPointer?, Int64, Int64, Int64, Int64) -> Int32
    typealias Debug =
        @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<CChar>?, Int, UnsafeMutableRawPointer?)
        -> Int32
    // curl_easy_setopt and curl_easy_getinfo are variadic; on Linux (x86_64, arm64) a variadic
    // call passes these arguments as a plain call does.
    typealias SetPointer = @convention(c) (OpaquePointer, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias SetLong = @convention(c) (OpaquePointer, Int32, Int) -> Int32
    typealias SetString = @convention(c) (OpaquePointer, Int32, UnsafePointer<CChar>) -> Int32
    typealias GetLong = @convention(c) (OpaquePointer, Int32, UnsafeMutablePointer<Int>) -> Int32

    struct Functions: Sendable {
        let setPointer: SetPointer
        let setLong: SetLong
        let setString: SetString
        let getLong: GetLong
    }

    /// The functions, if this libcurl has them and knows `CURLOPT_PREREQFUNCTION` (7.80).
    static let functions: Functions? = {
        guard let setopt = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "curl_easy_setopt"),
            let getinfo = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "curl_easy_getinfo"),
            let version = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "curl_version_info")
        else { return nil }
        // curl_version_info_data starts with an int `age` and a `char *version`, then an
        // unsigned int `version_num` (0xXXYYZZ).
        typealias VersionInfo = @convention(c) (Int32) -> UnsafeRawPointer?
        guard let info = unsafeBitCast(version, to: VersionInfo.self)(0),
            info.load(fromByteOffset: 2 * MemoryLayout<UnsafeRawPointer>.stride, as: UInt32.self) >= 0x07_5000
        else { return nil }
        return Functions(
            setPointer: unsafeBitCast(setopt, to: SetPointer.self), setLong: unsafeBitCast(setopt, to: SetLong.self),
            setString: unsafeBitCast(setopt, to: SetString.self), getLong: unsafeBitCast(getinfo, to: GetLong.self))
    }()

    /// `CURLOPT_NOPROGRESS`.
    static let noProgress: Int32 = 43
    /// `CURLOPT_XFERINFODATA`.
    static let xferInfoData: Int32 = 10_057
    /// `CURLOPT_XFERINFOFUNCTION`.
    static let xferInfoFunction: Int32 = 20_219
    /// `CURLOPT_PREREQDATA`.
    static let prereqData: Int32 = 10_313
    /// `CURLOPT_PREREQFUNCTION`.
    static let prereqFunction: Int32 = 20_312
    /// `CURLOPT_VERBOSE`.
    static let verbose: Int32 = 41
    /// `CURLOPT_DEBUGFUNCTION`.
    static let debugFunction: Int32 = 20_094
    /// `CURLOPT_HTTP_CONTENT_DECODING`.
    static let contentDecoding: Int32 = 158
    /// `CURLOPT_PROXY` (curl copies the strings it is given).
    static let proxy: Int32 = 10_004
    /// `CURLOPT_PROXYUSERNAME`.
    static let proxyUserName: Int32 = 10_175
    /// `CURLOPT_PROXYPASSWORD`.
    static let proxyPassword: Int32 = 10_176
    /// `CURLOPT_CAINFO`.
    static let caInfo: Int32 = 10_065
    /// `CURLOPT_CAPATH`.
    static let caPath: Int32 = 10_097
    /// `CURLOPT_SSL_VERIFYPEER`.
    static let verifyPeer: Int32 = 64
    /// `CURLOPT_SSL_VERIFYHOST`.
    static let verifyHost: Int32 = 81
    /// `CURLOPT_SSLCERT`.
    static let clientCertificate: Int32 = 10_025
    /// `CURLOPT_SSLCERTTYPE`.
    static let clientCertificateType: Int32 = 10_086
    /// `CURLOPT_SSLKEY`.
    static let clientKey: Int32 = 10_087
    /// `CURLOPT_ACCEPT_ENCODING`.
    static let acceptEncoding: Int32 = 10_102
    /// `CURLINFO_HEADER_IN`, for the debug callback.
    static let headerIn: Int32 = 1
    /// `CURLINFO_RESPONSE_CODE`.
    static let responseCode: Int32 = 0x20_0002
}
#endif
