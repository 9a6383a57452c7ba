import Foundation
import HTTPTypes
import OrchestraHTTP

/// Reads captured values (a step's captures, the auth block's token) from one response:
/// headers as text, the JSON body parsed once, the first time a path needs it.
struct ResponseReader {
    /// Why a value could not be read, for a message that names the capture.
    struct Missing: Error {
        let reason: String
        /// Whether the task was cancelled while a regular expression worked (not a missing value).
        var isCancellation = false
    }

    let result: HTTPResult
    /// `nil` until the body is first needed; then the parsed body, or `nil` inside if it is not JSON.
    private var parsed: JSONValue??
    /// How long the regular expressions run on this response may work, together.
    let regexLimit: Duration
    /// When they give up: `regexLimit` after the reader was made.
    let regexDeadline: ContinuousClock.Instant

    /// - Parameter regexLimit: How long the regular expressions run on `result` (`regex:`
    ///   captures, `matches:` checks) may work, together, from now (``BoundedRegex``).
    init(_ result: HTTPResult, regexLimit: Duration = BoundedRegex.defaultTimeLimit) {
        self.result = result
        self.regexLimit = regexLimit
        regexDeadline = ContinuousClock.now.advanced(by: regexLimit)
    }

    /// The first match of `regex` in the body, within the reader's time bound.
    ///
    /// - Throws: ``BoundedRegex/GaveUp`` once the bound passes; `CancellationError` when the
    ///   task is cancelled.
    func firstMatch(of regex: BoundedRegex) throws -> BoundedRegex.Match? {
        try regex.firstMatch(in: bodyText.text, deadline: regexDeadline, limit: regexLimit)
    }

    var contentType: String? { result.response.headerFields[.contentType] }

    /// The body as text, decoded by the `charset` of its content type (JSON as UTF-8): what
    /// `regex:` captures, `body` assertions and the auth block's `body_contains` read.
    var bodyText: HTTPBodyText { HTTPBodyText(decoding: result.body, contentType: contentType) }

    /// What a message about the body as text adds, when its charset is not one that is
    /// decoded (read from the content type and the body's first bytes only).
    var charsetNote: String? { HTTPBodyText(decoding: result.body.prefix(3), contentType: contentType).note }

    /// The body quoted (or described) for a message.
    var snippet: String { StepErrors.snippet(result.body, contentType: contentType) }

    /// ` (text/plain)`, or nothing when the response has no content type.
    var typeNote: String { contentType.map { " (\(short: $0))" } ?? "" }

    /// The JSON body, or `nil` if the body is not JSON.
    mutating func document() -> JSONValue? {
        if let parsed { return parsed }
        var document: JSONValue?
        do {
            document = try JSONValue(parsing: result.body)
        } catch {
            syntaxError = error
        }
        parsed = .some(document)
        return document
    }

    /// Why ``document()`` gave `nil`, once it did.
    private var syntaxError: JSONSyntaxError?

    /// What the body is, once ``document()`` gave `nil`, for a message after "the response":
    /// `is not JSON`, or `is JSON nested deeper than 512 levels of arrays and objects (the
    /// most that is read)`.
    var notJSON: String {
        if syntaxError?.isTooDeep == true {
            return
                "is JSON nested deeper than \(JSONValue.maxDepth) levels of arrays and objects (the most that is read)"
        }
        // An encoding not every transport decodes (`br`: URLSession on Linux does, AsyncHTTPClient
        // does not) says so.
        if let encoding = result.response.headerFields[.contentEncoding]?.lowercased(),
            !["identity", "gzip", "x-gzip", "deflate"].contains(encoding)
        {
            return
                "is not JSON (its Content-Encoding is '\(short: encoding)': only gzip and deflate are decoded on every transport)"
        }
        return "is not JSON"
    }

    /// The value `source` names: a header as text, or a value in the JSON body.
    mutating func value(of source: Capture.Source) throws(Missing) -> JSONValue {
        switch source {
        case .body(let path):
            guard let document = document() else {
                throw Missing(
                    reason: "the response\(typeNote) \(notJSON), so \(short: path) cannot be read: \(snippet)")
            }
            guard let value = path.evaluate(in: document) else {
                throw Missing(reason: "\(short: path) not found in the response: \(snippet)")
            }
            // A small part of a large body is kept on its own, not with the whole body.
            return value.detached
        case .regex(let pattern):
            let match: BoundedRegex.Match?
            do {
                match = try firstMatch(of: try BoundedRegex(pattern))
            } catch is CancellationError {
                throw Missing(reason: "cancelled", isCancellation: true)
            } catch let error as BoundedRegex.InvalidPattern {
                throw Missing(reason: "'\(short: pattern)' is not a regular expression: \(error)")
            } catch {
                throw Missing(reason: "\(error)")
            }
            guard let match else {
                throw Missing(reason: "the regular expression '\(short: pattern)' does not match the body: \(snippet)")
            }
            guard let value = match.text else {
                throw Missing(reason: "the first group of '\(short: pattern)' took no part in the match: \(snippet)")
            }
            return .string(value)
        case .header(let name):
            guard let value = result.response.headerFields[name] else {
                var seen: Set<HTTPField.Name> = []
                let present = result.response.headerFields.map(\.name).filter { seen.insert($0).inserted }
                let list = present.isEmpty ? "none" : present.map(\.rawName).joined(separator: ", ")
                throw Missing(reason: "the response has no '\(short: name.rawName)' header (it has: \(short: list))")
            }
            return .string(value)
        }
    }
}
