import Foundation

/// Where a capture is in a JSON response: `$` then dotted keys and bracketed steps, as in
/// `$.images[0].path`, `$.user.roles[-1]`, `$['key.with.dots']` or `$.items[*].id`. `$` alone
/// is the whole document.
///
/// - `.key` or `['key']` / `["key"]` (any key, with `\'`, `\"` and `\\` escapes): a member of
///   an object;
/// - `[n]`: an element of a list, `[-1]` the last (`[-n]` counts from the end);
/// - `[*]` or `.*`: every element of a list (or every value of an object). The path then
///   gives a list: the value of the rest of the path in each element that has it, in order.
///
/// ```swift
/// let path = try CapturePath(parsing: "$.images[*].path")
/// path.evaluate(in: album)           // .array([.string("/images/0"), .string("/images/1"), …])
/// ```
package struct CapturePath: Sendable, Hashable, CustomStringConvertible {
    /// One step down the document.
    package enum Component: Sendable, Hashable {
        case key(String)
        /// From the start when ≥ 0, from the end when < 0 (`-1` is the last).
        case index(Int)
        /// Every element (or member value).
        case wildcard
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
                components.append(key == "*" ? .wildcard : .key(String(key)))
                characters = characters.dropFirst(key.count)
            } else if first == "[" {
                let (component, rest) = try Self.bracket(characters.dropFirst(), in: source)
                components.append(component)
                characters = rest
            } else {
                throw CapturePathError(
                    message:
                        "capture path '\(short: source)': expected '.key', '[index]', ['key'] or [*] at '\(short: characters)'"
                )
            }
        }
        self.components = components
    }

    /// The step inside `[…]` (`text` starts after the `[`) and the text after its `]`.
    private static func bracket(
        _ text: Substring, in source: String
    ) throws(CapturePathError) -> (
        Component, Substring
    ) {
        if let quote = text.first, quote == "'" || quote == "\"" {
            var key = ""
            var rest = text.dropFirst()
            while let character = rest.first {
                rest = rest.dropFirst()
                if character == "\\", let escaped = rest.first {
                    key.append(escaped)
                    rest = rest.dropFirst()
                } else if character == quote {
                    guard rest.first == "]" else { break }
                    return (.key(key), rest.dropFirst())
                } else {
                    key.append(character)
                }
            }
            throw CapturePathError(
                message:
                    "capture path '\(short: source)' has a quoted key without its closing \(quote)] (as in $['a.b'])")
        }
        guard let close = text.firstIndex(of: "]") else {
            throw CapturePathError(message: "capture path '\(short: source)' has a '[' without ']'")
        }
        let inside = text[..<close].trimmingCharacters(in: .whitespaces)
        let rest = text[text.index(after: close)...]
        if inside == "*" { return (.wildcard, rest) }
        guard let index = Int(inside) else {
            throw CapturePathError(
                message:
                    "capture path '\(short: source)': '[\(short: inside)]' is not an index (a whole number; -1 is the last), [*] or a quoted key ['key']"
            )
        }
        return (.index(index), rest)
    }

    /// `$`: the whole document.
    static let whole = try! CapturePath(parsing: "$")

    /// Whether the path has a wildcard, and so gives a list.
    package var hasWildcard: Bool { components.contains(.wildcard) }

    /// The value at the path, or `nil` if a key or index is not there. With a wildcard: the
    /// list of the values found (elements without the rest of the path are left out), `nil`
    /// only if the value the wildcard applies to is not a list or an object.
    package func evaluate(in document: JSONValue) -> JSONValue? {
        evaluate(components[...], in: document)
    }

    private func evaluate(_ components: ArraySlice<Component>, in document: JSONValue) -> JSONValue? {
        var current = document
        for (offset, component) in zip(components.indices, components) {
            switch component {
            case .key(let key):
                guard let next = current[key] else { return nil }
                current = next
            case .index(let index):
                guard case .array(let elements) = current else { return nil }
                let position = index < 0 ? elements.count + index : index
                guard elements.indices.contains(position) else { return nil }
                current = elements[position]
            case .wildcard:
                let children: [JSONValue]
                switch current {
                case .array(let elements): children = Array(elements)
                case .object(let members): children = members.map(\.value)
                default: return nil
                }
                let rest = components[(offset + 1)...]
                let found = children.compactMap { evaluate(rest, in: $0) }
                // A wildcard further on gives a list per element: one flat list, as JSONPath gives.
                guard rest.contains(.wildcard) else { return .array(found) }
                return .array(found.flatMap { if case .array(let inner) = $0 { Array(inner) } else { [$0] } })
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
