import Foundation

/// The text of a parsed JSON value and an index of it: what the arrays and objects that
/// ``JSONValue/init(parsing:)`` gives are views of (``JSONArray``, ``JSONObject``).
///
/// Why: a value captured from a response may be as large as the body (64 MB by default), and
/// a tree of values costs about 16 times its text (a `JSONValue` per element, an array per
/// object, a `String` per key). The document keeps the checked text and one `UInt32` entry
/// per value; values are decoded when they are read.
///
/// The index (`tape`) is made of *blocks*, one per non-empty array or object: its count (of
/// elements, or of members), then its entries (for an object, a key's entry then its
/// value's, per member). An entry is the offset of a scalar value (a string's quote, a
/// number's first byte, a literal, or the bracket of an empty array or object), or
/// ``containerFlag`` (with ``objectFlag`` for an object) and the index of a non-empty
/// container's block.
///
/// Memory: the text plus 4 bytes per value and 4 more per non-empty array or object. A value
/// takes at least 2 bytes of text with its separator, and a non-empty array or object 2 more
/// than its contents, so a document costs at most 5 times its text (`[[[[0]]]]`), 3 times for
/// a flat list of one-digit numbers (`[0,0,0,…]`), and about twice for typical bodies.
/// ``memoryCost`` says it.
final class JSONDocument: Sendable {
    /// The largest text a document indexes, 512 MiB: offsets and block indexes are 30 bits.
    static let maximumSize = 1 << 29
    /// The bit of an entry that marks a non-empty array or object.
    static let containerFlag: UInt32 = 0x8000_0000
    /// The bit of a container's entry that marks an object.
    static let objectFlag: UInt32 = 0x4000_0000

    /// The whole text, checked: the bytes given to ``JSONValue/init(parsing:)``, shared, not
    /// copied.
    let data: Data
    /// The blocks (see the type's description).
    let tape: [UInt32]

    /// A document of checked `data` and its `tape`.
    init(data: Data, tape: [UInt32]) {
        self.data = data
        // Reserved from a bound: copied to its size if the bound was well above it.
        self.tape =
            tape.capacity - tape.count <= tape.count / 8
            ? tape
            : [UInt32](unsafeUninitializedCapacity: tape.count) { buffer, count in
                _ = buffer.initialize(from: tape)
                count = tape.count
            }
    }

    /// The bytes this document holds: its text and its index.
    var memoryCost: Int {
        data.count + tape.capacity * MemoryLayout<UInt32>.stride
    }

    /// Calls `body` with the text's bytes.
    private func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        data.withUnsafeBytes { body($0.bindMemory(to: UInt8.self)) }
    }

    /// The count of the container whose block starts at `block`.
    func count(ofBlock block: Int) -> Int {
        Int(tape[block])
    }

    /// The value of the entry at `index` of the tape.
    func value(ofEntry index: Int) -> JSONValue {
        value(of: tape[index])
    }

    /// The value an entry stands for.
    func value(of entry: UInt32) -> JSONValue {
        if entry & Self.containerFlag != 0 {
            let block = Int(entry & ~(Self.containerFlag | Self.objectFlag))
            return entry & Self.objectFlag != 0
                ? .object(JSONObject(self, block: block)) : .array(JSONArray(self, block: block))
        }
        let offset = Int(entry)
        switch withBytes({ $0[offset] }) {
        case UInt8(ascii: "\""): return .string(string(at: offset))
        case UInt8(ascii: "t"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "["): return .array([])
        case UInt8(ascii: "{"): return .object([])
        default:
            // A number, checked when parsed.
            let text = withBytes { bytes in
                let end = (try? JSONNumber.scan(bytes, from: offset)) ?? offset
                return String(decoding: bytes[offset..<end], as: UTF8.self)
            }
            return JSONValue(JSONNumber(validated: text))
        }
    }

    /// The string whose entry (an object key's) is at `index` of the tape.
    func string(ofEntry index: Int) -> String {
        string(at: Int(tape[index]))
    }

    /// Whether the key whose entry is at `index` of the tape is `key` (its UTF-8 bytes); a
    /// key written without escapes is compared byte for byte, without making a string.
    func key(ofEntry index: Int, equals key: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = Int(tape[index]) + 1
        let equal: Bool? = withBytes { bytes in
            var end = start
            while bytes[end] != UInt8(ascii: "\"") {
                if bytes[end] == UInt8(ascii: "\\") { return nil }
                end += 1
            }
            return end - start == key.count && bytes[start..<end].elementsEqual(key)
        }
        // A key with escapes: decoded, then compared.
        return equal ?? string(at: start - 1).utf8.elementsEqual(key)
    }

    /// The string whose opening quote is at `offset`.
    private func string(at offset: Int) -> String {
        withBytes { bytes in
            var end = offset + 1
            while bytes[end] != UInt8(ascii: "\"") {
                if bytes[end] == UInt8(ascii: "\\") {
                    // Escapes: the parser decodes them (the text was checked, so it does not fail).
                    var parser = JSONParser(checked: bytes, at: offset)
                    return (try? parser.string()) ?? ""
                }
                end += 1
            }
            return String(decoding: bytes[(offset + 1)..<end], as: UTF8.self)
        }
    }
}

extension JSONDocument {
    /// How many tape entries the container whose block starts at `block` spans, its
    /// descendants' blocks included: blocks are written as containers close, so a container's
    /// descendants are the blocks just before its own, from the one that closed first (found
    /// by following first containers down).
    ///
    /// Complexity: O(entries scanned on the way down), at most the span.
    func span(ofBlock block: Int, isObject: Bool) -> Int {
        func end(_ block: Int, _ isObject: Bool) -> Int { block + 1 + count(ofBlock: block) * (isObject ? 2 : 1) }
        var (first, firstIsObject) = (block, isObject)
        while let child = ((first + 1)..<end(first, firstIsObject)).first(where: { tape[$0] & Self.containerFlag != 0 })
        {
            first = Int(tape[child] & ~(Self.containerFlag | Self.objectFlag))
            firstIsObject = tape[child] & Self.objectFlag != 0
        }
        return end(block, isObject) - first
    }
}

extension JSONValue {
    /// The same value, holding only what it needs: an array or object that is a view of a
    /// small part of a large document (`$.meta` of a 60 MB body) is read again from its own
    /// text, so that keeping it (a capture) does not keep the whole document; anything else is
    /// itself.
    ///
    /// Complexity: O(size of the value) when it is copied, which it is only when it spans less
    /// than half of its document.
    package var detached: JSONValue {
        let parsed: (document: JSONDocument, block: Int, isObject: Bool)?
        switch self {
        case .array(let elements): parsed = elements.parsed.map { ($0.document, $0.block, false) }
        case .object(let members): parsed = members.parsed.map { ($0.document, $0.block, true) }
        default: parsed = nil
        }
        guard let (document, block, isObject) = parsed,
            document.span(ofBlock: block, isObject: isObject) * 2 < document.tape.count
        else { return self }
        return (try? JSONValue(parsing: Data(text.utf8))) ?? self
    }

    /// The bytes this value holds, counted the same way for both kinds of arrays and objects:
    /// a parsed one (``init(parsing:)``) costs its document (``JSONDocument/memoryCost``, once
    /// however many views share it); a list costs a `JSONValue` (or a member) per element, the
    /// list's header, and each string's bytes beyond what a `String` holds inline (15), with a
    /// header. For tests and diagnostics: the bound on what a captured value costs.
    ///
    /// Complexity: linear in the number of values in lists; O(1) per parsed document.
    package var memoryCost: Int {
        var seen: Set<ObjectIdentifier> = []
        var cost = MemoryLayout<JSONValue>.stride
        var pending: [JSONValue] = [self]
        func stringCost(_ string: String) -> Int { string.utf8.count > 15 ? 32 + string.utf8.count : 0 }
        while let value = pending.popLast() {
            switch value {
            case .null, .bool, .integer: break
            case .number(let number): cost += stringCost(number.text)
            case .string(let string): cost += stringCost(string)
            case .array(let elements):
                if let (document, _) = elements.parsed {
                    if seen.insert(ObjectIdentifier(document)).inserted { cost += document.memoryCost }
                } else {
                    cost += 32 + elements.count * MemoryLayout<JSONValue>.stride
                    pending.append(contentsOf: elements)
                }
            case .object(let members):
                if let (document, _) = members.parsed {
                    if seen.insert(ObjectIdentifier(document)).inserted { cost += document.memoryCost }
                } else {
                    cost += 32 + members.count * MemoryLayout<Member>.stride
                    for member in members {
                        cost += stringCost(member.key)
                        pending.append(member.value)
                    }
                }
            }
        }
        return cost
    }

    /// The same value with every array and object as a list (none a view of a document): what
    /// a parsed value cost before documents, for comparing ``memoryCost``.
    package var asLists: JSONValue {
        // Iterative: values are rebuilt bottom-up from an explicit stack.
        enum Task {
            case visit(JSONValue)
            case array(count: Int)
            case object(keys: [String])
        }
        var tasks: [Task] = [.visit(self)]
        var built: [JSONValue] = []
        while let task = tasks.popLast() {
            switch task {
            case .visit(.array(let elements)):
                tasks.append(.array(count: elements.count))
                for element in elements.reversed() { tasks.append(.visit(element)) }
            case .visit(.object(let members)):
                tasks.append(.object(keys: members.map(\.key)))
                for member in members.reversed() { tasks.append(.visit(member.value)) }
            case .visit(let scalar):
                built.append(scalar)
            case .array(let count):
                let elements = Array(built.suffix(count))
                built.removeLast(count)
                built.append(.array(elements))
            case .object(let keys):
                // Made before the values are removed (a slice would keep `built` shared).
                let members = zip(keys, built.suffix(keys.count)).map { Member($0, $1) }
                built.removeLast(keys.count)
                built.append(.object(members))
            }
        }
        return built[0]
    }
}
