import Foundation

/// Finds secrets in text in every form a request, a filter or a server writes them: the state
/// behind a ``Redactor``.
///
/// A secret is found as its Unicode scalars in order, each written in any of its spellings:
/// as it is; percent-encoded (`%73`, any case); `+` for a space; JSON-escaped (`\u0073`,
/// `\"`, `\/`, a surrogate pair), once or twice (JSON in a JSON string: `\\u0073`, `\\\"`);
/// or as an HTML character reference (`&#115;`, `&#x73;`, `&amp;`). The spellings may mix
/// within one occurrence. Besides the secret itself, its hex (any case) and its base64 and
/// base64url are found, whole or inside a longer base64 text (the characters that depend on
/// the secret alone, at each of the three byte alignments: a `Basic` credential holding it, a
/// server's `bodyBase64`).
///
/// Matching works on UTF-8 bytes; a match always starts and ends on a scalar boundary (it
/// starts with an ASCII byte or the secret's first scalar), so masking it never cuts a
/// character. Overlapping and adjacent matches are merged: every byte that any form of any
/// secret covers is masked.
///
/// Complexity: ``ranges(in:)`` is linear in the text for each form that can start at a byte
/// (the first byte of a spelling of the form's first scalar), times the form's length.
struct SecretMatcher: Sendable {
    /// One way of writing a scalar: its bytes, compared ignoring ASCII case when `foldsCase`.
    private struct Spelling: Sendable {
        var bytes: [UInt8]
        var foldsCase: Bool
    }

    /// A form of a secret: the keys (``key(_:foldsCase:)``) of its scalars, in order.
    private typealias Form = [UInt32]

    /// The secrets added, as given.
    private var secrets: Set<String> = []
    private var forms: [Form] = []
    /// The spellings of every scalar some form uses, by key.
    private var spellings: [UInt32: [Spelling]] = [:]
    /// For each byte, the forms whose first scalar has a spelling that starts with it.
    private var starts = [[Int]](repeating: [], count: 256)
    /// Whether ``starts`` lists a form for each byte.
    private var canStart = [Bool](repeating: false, count: 256)
    /// The most bytes one match can cover.
    private(set) var longestMatch = 0
    /// The secrets given (``add(_:)``), in order.
    private var given: [String] = []
    /// The secrets learned (``learn(_:keepingAtMost:)``), oldest first.
    private(set) var learned: [String] = []

    /// The most bytes a spelling of one scalar has: a surrogate pair escaped twice
    /// (`\\ud83d\\ude00`).
    static let longestSpelling = 14

    /// The shortest hex or base64 form kept: a shorter one (from a secret of a few bytes)
    /// would mask unrelated text.
    static let minimumEncodedLength = 6

    /// Whether no secret was added.
    var isEmpty: Bool { forms.isEmpty }

    /// Adds `secret` and its forms; returns false if it is empty or was added before.
    @discardableResult
    mutating func add(_ secret: String) -> Bool {
        guard !secret.isEmpty, secrets.insert(secret).inserted else { return false }
        given.append(secret)
        addForms(of: secret)
        return true
    }

    /// Adds `secret`, a learned one, and its forms. Beyond `maximum` learned secrets, the
    /// oldest quarter is forgotten (its forms rebuilt without them): a token a run refreshed
    /// hundreds of times ago, whose lines were masked when they were written.
    mutating func learn(_ secret: String, keepingAtMost maximum: Int) {
        guard !secret.isEmpty, !secrets.contains(secret) else { return }
        learned.append(secret)
        guard learned.count > maximum else {
            secrets.insert(secret)
            addForms(of: secret)
            return
        }
        var rebuilt = SecretMatcher()
        for secret in given { rebuilt.add(secret) }
        for secret in learned.dropFirst(learned.count - maximum * 3 / 4) {
            rebuilt.learned.append(secret)
            rebuilt.secrets.insert(secret)
            rebuilt.addForms(of: secret)
        }
        self = rebuilt
    }

    /// Adds the forms of `secret`.
    private mutating func addForms(of secret: String) {
        addForm(secret, foldsCase: false)
        let bytes = Array(secret.utf8)
        let digits = Array("0123456789abcdef".unicodeScalars)
        var hex = String.UnicodeScalarView()
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0xF)])
        }
        let hexText = String(hex)
        if hexText.utf8.count >= Self.minimumEncodedLength { addForm(hexText, foldsCase: true) }
        var encoded: Set<String> = []
        for offset in 0..<3 {
            // The secret preceded by `offset` unknown bytes: only the characters made of its
            // bits alone are certain.
            let base64 = Data([UInt8](repeating: 0, count: offset) + bytes).base64EncodedString()
            let characters = Array(base64)
            let first = (8 * offset + 5) / 6
            let last = 8 * (offset + bytes.count) / 6
            guard last - first >= Self.minimumEncodedLength else { continue }
            let core = String(characters[first..<last])
            encoded.insert(core)
            encoded.insert(Self.urlSafe(core))
            if offset == 0 {
                // Whole, with its padding, as `| base64` and `| base64url` write it.
                encoded.insert(base64)
                encoded.insert(Self.urlSafe(base64).filter { $0 != "=" })
            }
        }
        for form in encoded.sorted() { addForm(form, foldsCase: false) }
    }

    /// The byte ranges of `text` that some form of a secret covers, merged, in order.
    func ranges(in text: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        var found: [Range<Int>] = []
        guard !forms.isEmpty else { return found }
        for start in text.indices {
            // Most bytes start no form: a look-up in a table of flags, not a list.
            guard canStart[Int(text[start])] else { continue }
            let candidates = starts[Int(text[start])]
            var end = start
            for form in candidates {
                if let matched = self.end(of: forms[form], at: start, in: text), matched > end { end = matched }
            }
            guard end > start else { continue }
            if let last = found.last, start <= last.upperBound {
                if end > last.upperBound { found[found.count - 1] = last.lowerBound..<end }
            } else {
                found.append(start..<end)
            }
        }
        return found
    }

    /// Where the longest match of `form` that starts at `start` ends, if there is one.
    private func end(of form: Form, at start: Int, in text: UnsafeBufferPointer<UInt8>) -> Int? {
        // The ends reachable after each scalar: usually one; a few when spellings overlap
        // (a backslash written as `\`, `\\` or `\\\\`).
        var positions: [Int] = []
        advance(from: start, over: form[0], in: text, into: &positions)
        var next: [Int] = []
        for key in form.dropFirst() {
            if positions.isEmpty { return nil }
            next.removeAll(keepingCapacity: true)
            for position in positions { advance(from: position, over: key, in: text, into: &next) }
            swap(&positions, &next)
        }
        return positions.max()
    }

    /// Appends to `ends` where each spelling of the scalar `key` found at `position` ends.
    private func advance(
        from position: Int, over key: UInt32, in text: UnsafeBufferPointer<UInt8>, into ends: inout [Int]
    ) {
        for spelling in spellings[key] ?? [] {
            let count = spelling.bytes.count
            guard text.count - position >= count else { continue }
            var equal = true
            for offset in 0..<count {
                let byte = text[position + offset]
                let expected = spelling.bytes[offset]
                if byte == expected { continue }
                if spelling.foldsCase, Self.lowercased(byte) == Self.lowercased(expected) { continue }
                equal = false
                break
            }
            if equal, !ends.contains(position + count) { ends.append(position + count) }
        }
    }

    private mutating func addForm(_ text: String, foldsCase: Bool) {
        let form = text.unicodeScalars.map { Self.key($0, foldsCase: foldsCase) }
        guard let first = form.first else { return }
        for (scalar, key) in zip(text.unicodeScalars, form) where spellings[key] == nil {
            spellings[key] = Self.spellings(of: scalar, foldsCase: foldsCase)
        }
        longestMatch = max(longestMatch, form.count * Self.longestSpelling)
        let index = forms.count
        forms.append(form)
        var firstBytes: Set<UInt8> = []
        for spelling in spellings[first]! {
            let byte = spelling.bytes[0]
            firstBytes.insert(byte)
            if spelling.foldsCase { firstBytes.formUnion([Self.lowercased(byte), Self.uppercased(byte)]) }
        }
        for byte in firstBytes {
            starts[Int(byte)].append(index)
            canStart[Int(byte)] = true
        }
    }

    private static func key(_ scalar: Unicode.Scalar, foldsCase: Bool) -> UInt32 {
        scalar.value | (foldsCase ? 1 << 31 : 0)
    }

    /// Every spelling of `scalar` (``SecretMatcher``'s list).
    private static func spellings(of scalar: Unicode.Scalar, foldsCase: Bool) -> [Spelling] {
        let value = scalar.value
        let bytes = Array(String(scalar).utf8)
        var texts: [String] = [bytes.map { String(format: "%%%02X", $0) }.joined()]
        if value == 0x20 { texts.append("+") }
        var json = [
            value <= 0xFFFF
                ? String(format: "\\u%04x", value)
                : String(
                    format: "\\u%04x\\u%04x", 0xD800 + ((value - 0x10000) >> 10), 0xDC00 + ((value - 0x10000) & 0x3FF))
        ]
        let short: [UInt32: String] = [
            0x22: "\\\"", 0x5C: "\\\\", 0x2F: "\\/", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t",
        ]
        if let escape = short[value] { json.append(escape) }
        texts += json
        // JSON in a JSON string: each backslash and quote escaped again.
        texts += json.map {
            $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        }
        texts += ["&#\(value);", String(format: "&#x%x;", value)]
        let named: [UInt32: String] = [0x26: "&amp;", 0x3C: "&lt;", 0x3E: "&gt;", 0x22: "&quot;", 0x27: "&apos;"]
        if let entity = named[value] { texts.append(entity) }
        return [Spelling(bytes: bytes, foldsCase: foldsCase)]
            + texts.map { Spelling(bytes: Array($0.utf8), foldsCase: true) }
    }

    private static func urlSafe(_ base64: String) -> String {
        String(base64.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
    }

    private static func uppercased(_ byte: UInt8) -> UInt8 {
        (0x61...0x7A).contains(byte) ? byte - 0x20 : byte
    }
}
