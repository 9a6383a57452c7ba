/// The elements of a JSON array: a list of values, or a view into the text of a parsed
/// document (``JSONDocument``) whose elements are read when they are asked for.
///
/// A parsed array costs its text and a four-byte entry per value, not a tree of values:
/// ``JSONValue/init(parsing:)`` gives arrays and objects of this kind. Subscripting and
/// `count` are O(1); an element is decoded each time it is read (a string is made anew, an
/// array or object inside is another view).
///
/// ```swift
/// let value = try JSONValue(parsing: Data("[1, \"two\", [3]]".utf8))
/// guard case .array(let elements) = value else { return }
/// elements.count      // 3
/// elements[1]         // .string("two")
/// ```
package struct JSONArray: RandomAccessCollection, Sendable, Hashable, ExpressibleByArrayLiteral {
    private let storage: JSONContainerStorage<JSONValue>

    /// The array of `elements`.
    package init(_ elements: [JSONValue]) {
        storage = .values(elements)
    }

    package init(arrayLiteral elements: JSONValue...) {
        storage = .values(elements)
    }

    /// The array whose block starts at `block` in `document`.
    init(_ document: JSONDocument, block: Int) {
        storage = .parsed(document, block: UInt32(block))
    }

    package var startIndex: Int { 0 }

    package var endIndex: Int {
        switch storage {
        case .values(let values): values.count
        case .parsed(let document, let block): document.count(ofBlock: Int(block))
        }
    }

    package subscript(position: Int) -> JSONValue {
        switch storage {
        case .values(let values): return values[position]
        case .parsed(let document, let block):
            precondition(position >= 0 && position < document.count(ofBlock: Int(block)), "index out of range")
            return document.value(ofEntry: Int(block) + 1 + position)
        }
    }

    /// The document and block of a parsed array, else `nil`.
    var parsed: (document: JSONDocument, block: Int)? {
        if case .parsed(let document, let block) = storage { return (document, Int(block)) }
        return nil
    }

    package static func == (lhs: JSONArray, rhs: JSONArray) -> Bool {
        if let left = lhs.parsed, let right = rhs.parsed, left.document === right.document, left.block == right.block {
            return true
        }
        return lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for element in self { hasher.combine(element) }
    }
}

/// The members of a JSON object, in their order (a repeated key is kept): a list, or a view
/// into the text of a parsed document, like ``JSONArray``.
///
/// ```swift
/// let value = try JSONValue(parsing: Data(#"{"a": 1, "b": {"c": true}}"#.utf8))
/// guard case .object(let members) = value else { return }
/// members.count           // 2
/// members[0].key          // "a"
/// members["b"]?["c"]      // .bool(true)
/// ```
package struct JSONObject: RandomAccessCollection, Sendable, Hashable, ExpressibleByArrayLiteral {
    private let storage: JSONContainerStorage<JSONValue.Member>

    /// The object of `members`.
    package init(_ members: [JSONValue.Member]) {
        storage = .values(members)
    }

    package init(arrayLiteral members: JSONValue.Member...) {
        storage = .values(members)
    }

    /// The object whose block starts at `block` in `document`.
    init(_ document: JSONDocument, block: Int) {
        storage = .parsed(document, block: UInt32(block))
    }

    package var startIndex: Int { 0 }

    package var endIndex: Int {
        switch storage {
        case .values(let members): members.count
        case .parsed(let document, let block): document.count(ofBlock: Int(block))
        }
    }

    package subscript(position: Int) -> JSONValue.Member {
        switch storage {
        case .values(let members): return members[position]
        case .parsed(let document, let block):
            precondition(position >= 0 && position < document.count(ofBlock: Int(block)), "index out of range")
            let entry = Int(block) + 1 + 2 * position
            return JSONValue.Member(document.string(ofEntry: entry), document.value(ofEntry: entry + 1))
        }
    }

    /// The value of the first member named `key`, or `nil`. A parsed object compares the
    /// key with the text of each member's key, without making strings.
    ///
    /// Complexity: O(*n*) in the number of members.
    package subscript(key: String) -> JSONValue? {
        switch storage {
        case .values(let members):
            return members.first { $0.key == key }?.value
        case .parsed(let document, let block):
            let count = document.count(ofBlock: Int(block))
            var key = key
            return key.withUTF8 { key in
                for position in 0..<count {
                    let entry = Int(block) + 1 + 2 * position
                    if document.key(ofEntry: entry, equals: key) { return document.value(ofEntry: entry + 1) }
                }
                return nil
            }
        }
    }

    /// The document and block of a parsed object, else `nil`.
    var parsed: (document: JSONDocument, block: Int)? {
        if case .parsed(let document, let block) = storage { return (document, Int(block)) }
        return nil
    }

    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        if let left = lhs.parsed, let right = rhs.parsed, left.document === right.document, left.block == right.block {
            return true
        }
        return lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for member in self { hasher.combine(member) }
    }
}

/// Where the elements of a ``JSONArray`` or the members of a ``JSONObject`` are: in a list,
/// or in a parsed document (the block of the container's entries).
private enum JSONContainerStorage<Element: Sendable>: Sendable {
    case values([Element])
    case parsed(JSONDocument, block: UInt32)
}
