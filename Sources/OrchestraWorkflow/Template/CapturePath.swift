import Foundation

/// Where a capture is in a JSON response: `$` then dotted keys and `[n]` indexes, as in
/// `$.images[0].path` or `$.user.roles[1]`. `$` alone is the whole document.
///
/// ```swift
/// let path = try CapturePath(parsing: "$.images[0].path")
/// path.evaluate(in: album)           // .string("/images/0")
/// ```
package struct CapturePath: Sendable, Hashable, CustomStringConvertible {
    /// One step down the document.
    package enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    package let source: String
    package let components: [Component]

    /// Parses `source`.
    ///
    /// - Throws: ``CapturePathError`` naming what is wrong and where.
    package init(parsing source: String) throws(CapturePathError) {
        self.source = source
        var characters = Substring(source.trimmingCharacters(in: .whitespaces))
        guard characters.first == "$" else {
            throw CapturePathError(
                message: "capture path '\(short: source)' must start with '$' (as in $.access_token)")
        }
        characters = characters.dropFirst()
        var components: [Component] = []
        while let first = characters.first {
            if first == "." {
                characters = characters.dropFirst()
                let key = characters.prefix { $0 != "." && $0 != "[" }
                guard !key.isEmpty else {
                    throw CapturePathError(message: "capture path '\(short: source)' has an empty key after '.'")
                }
                components.append(.key(String(key)))
                characters = characters.dropFirst(key.count)
            } else if first == "[" {
                guard let close = characters.firstIndex(of: "]") else {
                    throw CapturePathError(message: "capture path '\(short: source)' has a '[' without ']'")
                }
                let inside = characters[characters.index(after: characters.startIndex)..<close]
                guard let index = Int(inside), index >= 0 else {
                    throw CapturePathError(
                        message:
                            "capture path '\(short: source)': '[\(short: inside)]' is not an index (a whole number ≥ 0)"
                    )
                }
                components.append(.index(index))
                characters = characters[characters.index(after: close)...]
            } else {
                throw CapturePathError(
                    message: "capture path '\(short: source)': expected '.key' or '[index]' at '\(short: characters)'")
            }
        }
        self.components = components
    }

    /// `$`: the whole document.
    static let whole = try! CapturePath(parsing: "$")

    /// The value at the path, or `nil` if a key or index is not there.
    package func evaluate(in document: JSONValue) -> JSONValue? {
        var current = document
        for component in components {
            switch component {
            case .key(let key):
                guard let next = current[key] else { return nil }
                current = next
            case .index(let index):
                guard let next = current[index] else { return nil }
                current = next
            }
        }
        return current
    }

    package var description: String { source }
}

/// A capture path that cannot be read.
package struct CapturePathError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}
