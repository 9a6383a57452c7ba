/// A response body as text, decoded by its `Content-Type`: the one way every reader of a body
/// as text (regular-expression captures, `body` assertions, an auth block's failure rule,
/// messages quoting a body, `--verbose`) decodes it.
///
/// The rules, in order:
/// 1. A JSON body (`application/json`, any `…+json`) is UTF-8, whatever the header says: JSON
///    exchanged between systems is UTF-8 (RFC 8259 §8.1).
/// 2. A byte order mark (UTF-8 `EF BB BF`, UTF-16 `FE FF` or `FF FE`) says the encoding and is
///    removed, whatever the `charset` (as browsers decode).
/// 3. Otherwise the `charset` parameter (``HTTPCharset``): UTF-8, ISO-8859-1/Latin-1,
///    Windows-1252, US-ASCII, UTF-16, UTF-16LE, UTF-16BE.
/// 4. No charset: UTF-8. A charset this does not know: UTF-8 too, with U+FFFD for what is not
///    UTF-8, and ``unknownCharset`` says so, for a message to repeat.
///
/// ```swift
/// let text = HTTPBodyText(decoding: body, contentType: "text/plain; charset=ISO-8859-1")
/// text.text        // "café" from 63 61 66 E9
/// ```
package struct HTTPBodyText: Sendable {
    /// The body as text.
    package var text: String
    /// The charset it was decoded with.
    package var charset: HTTPCharset
    /// The `charset` parameter's value when it names a charset this does not decode (the body
    /// was then read as UTF-8), at most 40 characters of it.
    package var unknownCharset: String?

    /// Decodes `body`, or a prefix of it (a message's window: a character cut at its end
    /// becomes U+FFFD), by the rules above.
    ///
    /// Complexity: O(n) in the bytes of `body` (the content type is read once, in time linear in
    /// its length).
    package init(decoding body: some RandomAccessCollection<UInt8>, contentType: String?) {
        let (declared, unknown) = Self.charset(ofContentType: contentType)
        unknownCharset = unknown
        var bytes = body[...]
        charset = declared
        if !Self.isJSON(contentType) {
            let sniffed: HTTPCharset? =
                if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
                    .utf8
                } else if bytes.starts(with: [0xFE, 0xFF]) {
                    .utf16BigEndian
                } else if bytes.starts(with: [0xFF, 0xFE]) {
                    .utf16LittleEndian
                } else {
                    nil
                }
            if let sniffed {
                // The byte order mark says the charset: whatever the label, nothing to say.
                charset = sniffed
                unknownCharset = nil
                if sniffed != .utf8 { bytes = bytes.dropFirst(2) }
            }
        }
        if charset == .utf8, bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            bytes = bytes.dropFirst(3)
        }
        text = charset.decode(bytes)
    }

    /// What a message adds about the decoding, or `nil` when there is nothing to say:
    /// `charset 'koi8-r' is not one Orchestra decodes: read as UTF-8`.
    package var note: String? {
        unknownCharset.map { "charset '\($0)' is not one Orchestra decodes: read as UTF-8" }
    }

    /// The charset a content type names, by the rules above without the byte order mark, and
    /// the label when it names one this does not decode (shortened to 40 characters).
    ///
    /// ```swift
    /// HTTPBodyText.charset(ofContentType: "text/html; Charset=\"Windows-1252\"")   // (.windows1252, nil)
    /// HTTPBodyText.charset(ofContentType: "application/json; charset=latin1")      // (.utf8, nil)
    /// ```
    package static func charset(ofContentType contentType: String?) -> (HTTPCharset, unknown: String?) {
        guard let contentType, !isJSON(contentType), let label = parameter("charset", in: contentType) else {
            return (.utf8, nil)
        }
        if let charset = HTTPCharset(label: label) { return (charset, nil) }
        let trimmed = label.trimmingSpaces
        return (.utf8, trimmed.count > 40 ? "\(trimmed.prefix(40))…" : String(trimmed))
    }

    /// The media type of a content type, lowercased, without its parameters:
    /// `text/html` for `Text/HTML; charset=utf-8`.
    package static func mediaType(of contentType: String) -> String {
        String(contentType.prefix { $0 != ";" }.trimmingSpaces).lowercased()
    }

    /// Whether a content type is JSON's: `application/json`, or any `…+json` such as
    /// `application/problem+json`.
    package static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = mediaType(of: contentType)
        return type == "application/json" || type.hasSuffix("+json")
    }

    /// The value of the first parameter `name` (any case) of a content type, unquoted:
    /// `parameter("charset", in: "text/plain; format=flowed; charset=\"utf-8\"")` is `utf-8`.
    /// A quoted value may hold `;` and `\`-escaped characters (RFC 9110 §5.6.4).
    package static func parameter(_ name: String, in contentType: String) -> String? {
        var scalars = Substring(contentType).unicodeScalars[...]
        // Past the media type.
        guard let semicolon = scalars.firstIndex(of: ";") else { return nil }
        scalars = scalars[scalars.index(after: semicolon)...]
        while !scalars.isEmpty {
            // name=value or name="quoted", up to the next ';' outside quotes.
            let nameEnd = scalars.firstIndex { $0 == "=" || $0 == ";" } ?? scalars.endIndex
            let parameterName = Substring(scalars[..<nameEnd]).trimmingSpaces
            guard nameEnd < scalars.endIndex, scalars[nameEnd] == "=" else {
                scalars = nameEnd < scalars.endIndex ? scalars[scalars.index(after: nameEnd)...] : scalars[nameEnd...]
                continue
            }
            scalars = scalars[scalars.index(after: nameEnd)...]
            while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
            var value = String.UnicodeScalarView()
            if scalars.first == "\"" {
                scalars = scalars.dropFirst()
                while let scalar = scalars.popFirst(), scalar != "\"" {
                    value.append(scalar == "\\" ? (scalars.popFirst() ?? scalar) : scalar)
                }
                // Anything up to the next ';' after the closing quote is not part of the value.
                let end = scalars.firstIndex(of: ";") ?? scalars.endIndex
                scalars = scalars[end...]
            } else {
                let end = scalars.firstIndex(of: ";") ?? scalars.endIndex
                value.append(contentsOf: scalars[..<end])
                scalars = scalars[end...]
            }
            if scalars.first == ";" { scalars = scalars.dropFirst() }
            if parameterName.lowercased() == name.lowercased() { return String(value) }
        }
        return nil
    }
}
