public import Foundation
public import HTTPTypes

/// Where a response's body goes when it is not to be held in memory: a file being written, a
/// hash, a counter. A transport hands it each part of the body (decoded, unless decoding is
/// off) as the part arrives, so that a body of any size passes through in bounded memory.
///
/// ```swift
/// final class Counter: HTTPResponseBodySink {
///     let bytes = Locked(0)
///     func begin() throws { bytes.withLock { $0 = 0 } }
///     func write(_ part: UnsafeRawBufferPointer) throws { bytes.withLock { $0 += part.count } }
/// }
/// ```
///
/// The transport calls it one call at a time, from its own thread: keep each call short (a
/// file write is; waiting for something is not). What a call throws ends the request, and the
/// transport throws that error as it is.
public protocol HTTPResponseBodySink: Sendable {
    /// A response's body starts. Called again when the request is sent again (a redirect
    /// followed, a retry): start over, dropping what the earlier response wrote.
    func begin() throws
    /// The next part of the body.
    func write(_ part: UnsafeRawBufferPointer) throws
}

/// What a transport does with one response's body: hold it in memory (the default) up to a
/// limit, or hand it to a ``HTTPResponseBodySink``; decode it or return it as sent.
///
/// ```swift
/// var options = HTTPRequestOptions()
/// options.responseBody = .init(sink: fileWriter)          // a 1 GB download in bounded memory
/// options.responseBody = .init(maximumSize: 1 << 20)      // a smaller limit for this request
/// options.responseBody = .init(decompresses: false)       // the body as the server sent it
/// ```
public struct HTTPResponseBodyHandling: Sendable {
    /// Where the body goes instead of memory; the transport then returns an empty body.
    public var sink: (any HTTPResponseBodySink)?
    /// The largest body held in memory, counted decoded (`nil`: the transport's own limit).
    /// Not applied to a sink, which decides for itself (it may throw).
    public var maximumSize: Int?
    /// Whether a gzip or deflate body is decoded (and asked for). `false`: the request asks
    /// for `identity` unless it has an `Accept-Encoding` of its own, and the body comes back
    /// as sent. A transport that cannot turn decoding off refuses such a request.
    public var decompresses: Bool

    public init(sink: (any HTTPResponseBodySink)? = nil, maximumSize: Int? = nil, decompresses: Bool = true) {
        self.sink = sink
        self.maximumSize = maximumSize
        self.decompresses = decompresses
    }

    /// In memory, within the transport's limit, decoded.
    public static var standard: HTTPResponseBodyHandling { HTTPResponseBodyHandling() }

    /// Whether this is ``standard``.
    public var isStandard: Bool { sink == nil && maximumSize == nil && decompresses }
}

/// The error a sink threw, carried through a client that only passes its own errors on.
package struct HTTPResponseSinkFailure: Error {
    package let error: any Error
    package init(_ error: any Error) { self.error = error }
}

extension HTTPTransport {
    /// Sends `request` and handles the body as `body` says: the default implementation, for a
    /// transport that only returns whole bodies. A standard handling goes to
    /// ``send(_:content:progress:timeout:)`` (or ``send(_:content:progress:)``); a smaller
    /// limit is checked on the whole body; a sink is handed the whole body at once (correct,
    /// but held in memory: a transport that streams implements
    /// ``send(_:content:receiving:progress:timeout:)`` itself); turning decoding off is refused,
    /// since this transport's decoding is unknown.
    ///
    /// - Throws: As ``send(_:content:progress:)``; ``HTTPTransportError`` (`.responseTooLarge`)
    ///   past `body.maximumSize`, (`.invalidRequest`) for `decompresses: false`; what the sink
    ///   throws.
    public func send(
        _ request: HTTPRequest, content: HTTPRequestBody?, receiving body: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        guard body.decompresses else {
            throw HTTPTransportError(
                code: .invalidRequest,
                message: "\(type(of: self)) cannot return a body as sent (decoding cannot be turned off)",
                host: request.authority)
        }
        let (response, data) = try await send(request, content: content, progress: progress, within: timeout)
        if let limit = body.maximumSize, data.count > limit {
            throw HTTPTransportError(
                code: .responseTooLarge,
                message: "the response from \(request.authority ?? "the server") is larger than \(limit) bytes",
                host: request.authority)
        }
        guard let sink = body.sink else { return (response, data) }
        try sink.begin()
        try data.withUnsafeBytes { try sink.write($0) }
        return (response, Data())
    }
}
