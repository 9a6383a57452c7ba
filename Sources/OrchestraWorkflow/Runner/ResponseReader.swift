import Foundation
import HTTPTypes
import OrchestraHTTP

/// Reads captured values (a step's captures, the auth block's token) from one response:
/// headers as text, the JSON body parsed once, the first time a path needs it.
struct ResponseReader {
    /// Why a value could not be read, for a message that names the capture.
    struct Missing: Error {
        let reason: String
    }

    let result: HTTPResult
    /// `nil` until the body is first needed; then the parsed body, or `nil` inside if it is not JSON.
    private var parsed: JSONValue??

    init(_ result: HTTPResult) {
        self.result = result
    }

    var contentType: String? { result.response.headerFields[.contentType] }

    /// The body quoted (or described) for a message.
    var snippet: String { StepErrors.snippet(result.body, contentType: contentType) }

    /// ` (text/plain)`, or nothing when the response has no content type.
    var typeNote: String { contentType.map { " (\(short: $0))" } ?? "" }

    /// The JSON body, or `nil` if the body is not JSON.
    mutating func document() -> JSONValue? {
        if let parsed { return parsed }
        let document = try? JSONValue(parsing: result.body)
        parsed = .some(document)
        return document
    }

    /// The value `source` names: a header as text, or a value in the JSON body.
    mutating func value(of source: Capture.Source) throws(Missing) -> JSONValue {
        switch source {
        case .body(let path):
            guard let document = document() else {
                throw Missing(
                    reason: "the response\(typeNote) is not JSON, so \(short: path) cannot be read: \(snippet)")
            }
            guard let value = path.evaluate(in: document) else {
                throw Missing(reason: "\(short: path) not found in the response: \(snippet)")
            }
            return value
        case .regex(let pattern):
            let text = String(decoding: result.body, as: UTF8.self)
            guard let regex = try? Regex(pattern), let match = try? regex.firstMatch(in: text) else {
                throw Missing(reason: "the regular expression '\(short: pattern)' does not match the body: \(snippet)")
            }
            let output = match.output
            let value = output.count > 1 ? output[1].substring : output[0].substring
            guard let value else {
                throw Missing(reason: "the first group of '\(short: pattern)' took no part in the match: \(snippet)")
            }
            return .string(String(value))
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
