#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import HTTPTypes
import Orchestra

/// Requests to an IPv6 address (`http://[::1]:8080/`) through Linux's URLSession.
///
/// Why: before it gives a URL to curl, Linux's URLSession (swift-corelibs-foundation up to
/// Swift 6.3; fixed in its main branch in July 2026, swiftlang/swift-corelibs-foundation#5498)
/// checks that curl reads the same host as `URL.host`; for an IPv6 literal `URL.host` is `::1`
/// and curl's host `[::1]`, so every such request failed as "URLSession cannot send to this
/// URL", never reaching the network.
///
/// How: URLSession is given the same URL with a stand-in host that names the address
/// (`[::1]` → `--1.ipv6-literal.invalid`: `:` as `-`, under the reserved `.invalid`, which
/// no resolver answers), and the task's curl handle is given the real URL as a `CURLU`
/// (`CURLOPT_CURLU`, which overrides the URL URLSession sets), when the transfer is set up
/// (``RedirectBodyLimit/setUp(_:)``, before URLSession configures the handle). curl then
/// connects to the address, and sends the `Host` field, the TLS name and the proxy's request
/// from the real URL; the proxy is chosen by the real host (``realURL(_:)``). If the handle
/// cannot be given it, the request fails (the transfer's other settings fail so too) and
/// nothing is sent to the stand-in.
enum IPLiteralURL {
    /// What follows the address in a stand-in host.
    static let suffix = ".ipv6-literal.invalid"

    /// The URL URLSession is given for `url`: `url` itself unless its host is an IPv6 literal.
    /// A zone (`[fe80::1%25eth0]`) is not taken: `nil`.
    static func standIn(for url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let host = components.percentEncodedHost
        else { return url }
        let address = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard address.contains(":") else { return url }
        guard address.utf8.allSatisfy({ $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || isHexDigit($0) })
        else { return nil }
        components.percentEncodedHost = address.replacingOccurrences(of: ":", with: "-") + suffix
        return components.url
    }

    /// The real URL of a stand-in (``standIn(for:)``), or `nil` if `url` is not one.
    static func realURL(_ url: URL?) -> URL? {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let host = components.percentEncodedHost, host.hasSuffix(suffix)
        else { return nil }
        let address = host.dropLast(suffix.count).replacingOccurrences(of: "-", with: ":")
        components.percentEncodedHost = "[\(address)]"
        return components.url
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    /// The `CURLU` handles given to transfers, by the address of their task, until they end.
    private static let handles = Locked<[UInt: UInt]>([:])

    /// Gives the curl handle of `task`, being set up, the real URL of its stand-in, if it has
    /// one. Returns `false` if it has one and curl would not take it (the caller then cancels
    /// the task rather than let it go to the stand-in).
    static func setUp(_ task: URLSessionTask, handle: OpaquePointer, curl: Curl.Functions) -> Bool {
        guard let real = realURL(task.originalRequest?.url) else { return true }
        guard let functions = URLFunctions.loaded, let url = functions.make() else { return false }
        let set = real.absoluteString.withCString { functions.set(url, 0, $0, 0) }  // CURLUPART_URL
        guard set == 0, curl.setPointer(handle, curlu, UnsafeMutableRawPointer(url)) == 0 else {
            functions.cleanup(url)
            return false
        }
        handles.withLock { $0[key(of: task)] = UInt(bitPattern: UnsafeMutableRawPointer(url)) }
        return true
    }

    /// Frees the `CURLU` of `task`, which ended (curl has read it, when the transfer started).
    static func end(_ task: URLSessionTask) {
        guard let address = handles.withLock({ $0.removeValue(forKey: key(of: task)) }),
            let functions = URLFunctions.loaded, let pointer = UnsafeMutableRawPointer(bitPattern: address)
        else { return }
        functions.cleanup(OpaquePointer(pointer))
    }

    private static func key(of task: URLSessionTask) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(task).toOpaque())
    }

    /// `CURLOPT_CURLU`.
    static let curlu: Int32 = 10_282

    /// libcurl's URL API (7.62), from the libcurl URLSession has loaded.
    struct URLFunctions: @unchecked Sendable {
        // @unchecked: C function pointers, immutable.
        typealias Make = @convention(c) () -> OpaquePointer?
        typealias Set = @convention(c) (OpaquePointer, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        typealias Cleanup = @convention(c) (OpaquePointer) -> Void

        let make: Make
        let set: Set
        let cleanup: Cleanup

        static let loaded: URLFunctions? = {
            let process = UnsafeMutableRawPointer(bitPattern: 0)
            guard let make = dlsym(process, "curl_url"), let set = dlsym(process, "curl_url_set"),
                let cleanup = dlsym(process, "curl_url_cleanup")
            else { return nil }
            return URLFunctions(
                make: unsafeBitCast(make, to: Make.self), set: unsafeBitCast(set, to: Set.self),
                cleanup: unsafeBitCast(cleanup, to: Cleanup.self))
        }()
    }
}
#endif
