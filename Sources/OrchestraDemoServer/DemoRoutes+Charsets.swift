import Foundation
import Hummingbird

/// Text bodies in charsets other than UTF-8, for the tests of how a body is decoded by its
/// `Content-Type`.
///
/// `GET /charset/{name}` answers ``texts``[name] encoded as the name says, with its
/// `Content-Type`:
/// - `latin1` — `café naïve`, ISO-8859-1 (`text/plain; charset=ISO-8859-1`);
/// - `windows-1252` — `“café” – 5 €`, Windows-1252 (`text/html; charset="windows-1252"`);
/// - `utf-16` — `café ☕ 😀`, a byte order mark then UTF-16LE (`text/plain; charset=utf-16`);
/// - `utf-16be` — `café`, UTF-16BE without a byte order mark (`text/plain; charset=UTF-16BE`);
/// - `koi8-r` — `привет` in KOI8-R, a charset the client does not decode (`text/plain; charset=koi8-r`);
/// - `json-latin1` — `{"name":"café"}` in UTF-8, labelled `application/json; charset=ISO-8859-1`
///   (JSON is UTF-8 whatever the label says).
extension DemoRoutes {
    /// Each route's text and content type.
    static let texts: [String: (text: String, contentType: String)] = [
        "latin1": ("café naïve", "text/plain; charset=ISO-8859-1"),
        "windows-1252": ("“café” – 5 €", "text/html; charset=\"windows-1252\""),
        "utf-16": ("café ☕ 😀", "text/plain; charset=utf-16"),
        "utf-16be": ("café", "text/plain; charset=UTF-16BE"),
        "koi8-r": ("привет", "text/plain; charset=koi8-r"),
        "json-latin1": ("{\"name\":\"café\"}", "application/json; charset=ISO-8859-1"),
    ]

    static func addCharsetRoutes(to router: Router<BasicRequestContext>) {
        router.get("/charset/:name") { _, context -> Response in
            let name = try context.parameters.require("name")
            guard let (text, contentType) = texts[name] else {
                throw HTTPError(.notFound, message: "no charset route \(name); one of \(texts.keys.sorted())")
            }
            return Response(
                status: .ok, headers: [.contentType: contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: encoded(text, as: name))))
        }
    }

    /// `text` in the charset the route `name` uses.
    static func encoded(_ text: String, as name: String) -> [UInt8] {
        switch name {
        case "latin1":
            return text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
        case "windows-1252":
            let high: [Unicode.Scalar: UInt8] = ["“": 0x93, "”": 0x94, "–": 0x96, "€": 0x80]
            return text.unicodeScalars.map { high[$0] ?? UInt8(truncatingIfNeeded: $0.value) }
        case "utf-16":
            return [0xFF, 0xFE] + text.utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)] }
        case "utf-16be":
            return text.utf16.flatMap { [UInt8($0 >> 8), UInt8(truncatingIfNeeded: $0)] }
        case "koi8-r":
            // KOI8-R's lower-case Cyrillic letters used here.
            let koi8: [Unicode.Scalar: UInt8] = ["п": 0xD0, "р": 0xD2, "и": 0xC9, "в": 0xD7, "е": 0xC5, "т": 0xD4]
            return text.unicodeScalars.map { koi8[$0] ?? UInt8(truncatingIfNeeded: $0.value) }
        default:
            return Array(text.utf8)
        }
    }
}
