import Foundation

/// What a request sends: bytes in memory, or a file that a streaming transport reads as it
/// sends (a transport that does not stream reads it whole, memory-mapped when it can).
///
/// ```swift
/// let result = try await api.data(for: upload, content: .file(URL(fileURLWithPath: "video.mp4")), options: .init())
/// ```
///
/// A file is read again for each attempt and for each redirect that keeps the body (307,
/// 308), so it must not change while the request runs.
public enum HTTPRequestBody: Sendable, Hashable {
    /// Bytes in memory.
    case data(Data)
    /// A regular file's bytes.
    case file(URL)

    /// The bytes in memory; a file is read now, memory-mapped when it can be.
    ///
    /// - Throws: The error reading the file.
    public func contents() throws -> Data {
        switch self {
        case .data(let data): data
        case .file(let url): try Data(contentsOf: url, options: .mappedIfSafe)
        }
    }

    /// `body` as a request body, `nil` for none.
    static func from(_ body: Data?) -> HTTPRequestBody? {
        body.map(HTTPRequestBody.data)
    }
}
