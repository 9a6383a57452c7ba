/// A text encoding a body is decoded with: the few that the web's text bodies use.
///
/// Labels are read as the WHATWG Encoding Standard (and so every browser) reads them: in any
/// case, and `iso-8859-1`, `latin1` and `us-ascii` name Windows-1252, a superset of ISO-8859-1
/// whose bytes 0x80–0x9F are printable characters (`€`, `“`, `”`, `…`) rather than control
/// characters: a server that says Latin-1 and sends a curly quote is read as it meant it.
/// `utf-16` without a byte order mark is little-endian, as browsers read it.
///
/// ```swift
/// HTTPCharset(label: "ISO-8859-1")?.decode([0x63, 0x61, 0x66, 0xE9])   // "café"
/// ```
package enum HTTPCharset: Sendable, Hashable, CustomStringConvertible {
    case utf8
    /// Windows-1252 (also for ISO-8859-1 and US-ASCII).
    case windows1252
    case utf16LittleEndian
    case utf16BigEndian

    /// The charset a `charset` parameter names (any case, surrounding spaces ignored), or
    /// `nil` for one this does not decode.
    package init?(label: some StringProtocol) {
        let label = label.trimmingSpaces.lowercased()
        if Self.utf8Labels.contains(label) {
            self = .utf8
        } else if Self.windows1252Labels.contains(label) {
            self = .windows1252
        } else if Self.utf16LittleEndianLabels.contains(label) {
            self = .utf16LittleEndian
        } else if label == "utf-16be" || label == "unicodefffe" {
            self = .utf16BigEndian
        } else {
            return nil
        }
    }

    private static let utf8Labels: Set<String> = [
        "utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8",
    ]
    private static let windows1252Labels: Set<String> = [
        "windows-1252", "cp1252", "x-cp1252", "iso-8859-1", "iso8859-1", "iso88591", "iso_8859-1",
        "iso_8859-1:1987", "iso-ir-100", "l1", "latin1", "csisolatin1", "cp819", "ibm819", "us-ascii", "ascii",
        "ansi_x3.4-1968",
    ]
    private static let utf16LittleEndianLabels: Set<String> = [
        "utf-16", "utf-16le", "ucs-2", "unicode", "unicodefeff", "csunicode", "iso-10646-ucs-2",
    ]

    /// `UTF-8`, `windows-1252`, `UTF-16LE`, `UTF-16BE`.
    package var description: String {
        switch self {
        case .utf8: "UTF-8"
        case .windows1252: "windows-1252"
        case .utf16LittleEndian: "UTF-16LE"
        case .utf16BigEndian: "UTF-16BE"
        }
    }

    /// `bytes` as text. Bytes that are not valid in the charset become U+FFFD (malformed UTF-8,
    /// an unpaired UTF-16 surrogate, a last odd byte of UTF-16); a byte order mark is kept (see
    /// ``HTTPBodyText`` for the one that removes it).
    ///
    /// Complexity: O(n) in the number of bytes, with memory for the result only (and, for
    /// UTF-16, the result's growth): a 64 MB body is decoded in one pass.
    package func decode<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes) -> String {
        switch self {
        case .utf8: String(decoding: bytes, as: UTF8.self)
        case .windows1252: Self.decodeWindows1252(bytes)
        case .utf16LittleEndian: Self.decodeUTF16(bytes, littleEndian: true)
        case .utf16BigEndian: Self.decodeUTF16(bytes, littleEndian: false)
        }
    }

    /// Windows-1252's bytes 0x80–0x9F, as the WHATWG index has them (the five the code page
    /// leaves undefined, 0x81, 0x8D, 0x8F, 0x90 and 0x9D, are the C1 controls of the same
    /// value). Every other byte is the code point of its value.
    static let windows1252High: [UInt32] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,  // 0x80…0x87
        0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,  // 0x88…0x8F
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,  // 0x90…0x97
        0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,  // 0x98…0x9F
    ]

    private static func scalar(windows1252 byte: UInt8) -> UInt32 {
        (0x80..<0xA0).contains(byte) ? windows1252High[Int(byte &- 0x80)] : UInt32(byte)
    }

    /// Two passes over the bytes: the exact UTF-8 length, then the text written in place (no
    /// copy, no intermediate buffer).
    private static func decodeWindows1252<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes) -> String {
        withBuffer(bytes) { bytes in
            var length = 0
            for byte in bytes {
                length +=
                    byte < 0x80 ? 1 : (0x80..<0xA0).contains(byte) ? utf8Length(windows1252High[Int(byte &- 0x80)]) : 2
            }
            guard length > 0 else { return "" }
            return String(unsafeUninitializedCapacity: length) { buffer in
                var index = 0
                for byte in bytes {
                    if byte < 0x80 {
                        buffer[index] = byte
                        index += 1
                    } else {
                        index = write(scalar(windows1252: byte), into: buffer, at: index)
                    }
                }
                return index
            }
        }
    }

    /// As ``decodeWindows1252(_:)``: two passes, the second writing UTF-8 in place. An unpaired
    /// surrogate, and a last odd byte, are U+FFFD.
    private static func decodeUTF16<Bytes: RandomAccessCollection<UInt8>>(
        _ bytes: Bytes, littleEndian: Bool
    ) -> String {
        withBuffer(bytes) { bytes in
            let units = bytes.count / 2
            @inline(__always) func unit(_ index: Int) -> UInt32 {
                let first = UInt32(bytes[2 &* index])
                let second = UInt32(bytes[2 &* index &+ 1])
                return littleEndian ? first | second << 8 : first << 8 | second
            }
            /// The scalar at `index`, and how many units it takes.
            @inline(__always) func scalar(at index: Int) -> (UInt32, Int) {
                let value = unit(index)
                guard (0xD800...0xDFFF).contains(value) else { return (value, 1) }
                guard value < 0xDC00, index + 1 < units else { return (0xFFFD, 1) }
                let low = unit(index + 1)
                guard (0xDC00...0xDFFF).contains(low) else { return (0xFFFD, 1) }
                return (0x1_0000 + ((value - 0xD800) << 10) + (low - 0xDC00), 2)
            }
            var length = bytes.count % 2 == 1 ? 3 : 0
            var index = 0
            while index < units {
                let (value, taken) = scalar(at: index)
                length += utf8Length(value)
                index += taken
            }
            guard length > 0 else { return "" }
            return String(unsafeUninitializedCapacity: length) { buffer in
                var written = 0
                var index = 0
                while index < units {
                    let (value, taken) = scalar(at: index)
                    written = write(value, into: buffer, at: written)
                    index += taken
                }
                if bytes.count % 2 == 1 { written = write(0xFFFD, into: buffer, at: written) }
                return written
            }
        }
    }

    @inline(__always) private static func utf8Length(_ scalar: UInt32) -> Int {
        scalar < 0x80 ? 1 : scalar < 0x800 ? 2 : scalar < 0x1_0000 ? 3 : 4
    }

    /// Writes `scalar` as UTF-8 at `index`; returns the index after it.
    @inline(__always) private static func write(
        _ scalar: UInt32, into buffer: UnsafeMutableBufferPointer<UInt8>, at index: Int
    ) -> Int {
        switch scalar {
        case ..<0x80:
            buffer[index] = UInt8(scalar)
            return index + 1
        case ..<0x800:
            buffer[index] = UInt8(0xC0 | (scalar >> 6))
            buffer[index + 1] = UInt8(0x80 | (scalar & 0x3F))
            return index + 2
        case ..<0x1_0000:
            buffer[index] = UInt8(0xE0 | (scalar >> 12))
            buffer[index + 1] = UInt8(0x80 | ((scalar >> 6) & 0x3F))
            buffer[index + 2] = UInt8(0x80 | (scalar & 0x3F))
            return index + 3
        default:
            buffer[index] = UInt8(0xF0 | (scalar >> 18))
            buffer[index + 1] = UInt8(0x80 | ((scalar >> 12) & 0x3F))
            buffer[index + 2] = UInt8(0x80 | ((scalar >> 6) & 0x3F))
            buffer[index + 3] = UInt8(0x80 | (scalar & 0x3F))
            return index + 4
        }
    }

    /// `body` on the bytes of `bytes` in contiguous memory (copied only if they are not).
    private static func withBuffer<Bytes: RandomAccessCollection<UInt8>>(
        _ bytes: Bytes, _ body: (UnsafeBufferPointer<UInt8>) -> String
    ) -> String {
        if let text = bytes.withContiguousStorageIfAvailable(body) { return text }
        return Array(bytes).withUnsafeBufferPointer(body)
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end (HTTP's optional whitespace).
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let text = Substring(self)
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return text[first...last]
    }
}
