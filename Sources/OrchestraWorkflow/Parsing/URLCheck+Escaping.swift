import Foundation

extension URLCheck {
    /// `text` as it is sent: ASCII only, written as RFC 3986 allows.
    ///
    /// - Every character its component does not allow (a non-ASCII letter, a space, `"`, `<`,
    ///   `[` in a path, a second `#`, …) is percent-encoded as UTF-8: `São` → `S%C3%A3o`.
    /// - An escape already there (`%` and two hex digits) is kept: `%20` stays `%20`, `%2F`
    ///   stays `%2F`. A `%` that starts no escape is encoded as `%25`.
    /// - Everything else is left byte for byte, so a URL that was already valid is unchanged.
    /// - A host with non-ASCII letters is written in its IDNA form (`bücher.example` →
    ///   `xn--bcher-kva.example`); one that has no such form is left as written, and
    ///   ``problem(with:)`` says so.
    ///
    /// Values inserted by a template are already encoded (``Template/render(for:with:)``): this
    /// only changes what was written literally (or inserted with `| raw`).
    ///
    /// Complexity: linear in the length of `text`. The delimiters are found among the UTF-8
    /// bytes (RFC 3986 is written in bytes, and a search by `Character` costs a grapheme break
    /// test per character on every request sent).
    static func escaped(_ text: String) -> String {
        var rest = Substring(text)
        var output = ""
        if let scheme = scheme(of: rest) {
            output += scheme + ":"
            rest = rest.dropFirst(scheme.count + 1)
            if rest.hasPrefix("//") {
                output += "//"
                rest = rest.dropFirst(2)
                let end =
                    rest.utf8.firstIndex {
                        $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
                    }
                    ?? rest.endIndex
                output += authority(rest[..<end])
                rest = rest[end...]
            }
        }
        let pathEnd = rest.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        output += encoded(rest[..<pathEnd], allowing: pathCharacters)
        rest = rest[pathEnd...]
        if rest.utf8.first == UInt8(ascii: "?") {
            let queryEnd = rest.utf8.firstIndex(of: UInt8(ascii: "#")) ?? rest.endIndex
            output += "?" + encoded(rest.dropFirst()[..<queryEnd], allowing: queryCharacters)
            rest = rest[queryEnd...]
        }
        if rest.utf8.first == UInt8(ascii: "#") {
            output += "#" + encoded(rest.dropFirst(), allowing: queryCharacters)
        }
        return output
    }

    /// `http` in `http://…`: letters, digits, `+ - .`, starting with a letter, before a ':'.
    private static func scheme(of text: Substring) -> Substring? {
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")), let first = text.first, first.isASCII,
            first.isLetter
        else {
            return nil
        }
        let scheme = text[..<colon]
        let valid = scheme.utf8.allSatisfy(schemeCharacters.contains)
        return valid ? scheme : nil
    }

    /// `user:password@host:port`, with the user information encoded and the host in ASCII.
    private static func authority(_ authority: Substring) -> String {
        var userInfo = ""
        var hostAndPort = authority
        if let at = authority.utf8.lastIndex(of: UInt8(ascii: "@")) {
            userInfo = encoded(authority[..<at], allowing: userInfoCharacters) + "@"
            hostAndPort = authority[authority.index(after: at)...]
        }
        // An IP literal ([::1]) is ASCII already; otherwise the port follows the last ':'.
        let portStart =
            hostAndPort.utf8.first == UInt8(ascii: "[")
            ? hostAndPort.utf8.lastIndex(of: UInt8(ascii: "]")).flatMap {
                hostAndPort[$0...].utf8.firstIndex(of: UInt8(ascii: ":"))
            }
            : hostAndPort.utf8.lastIndex(of: UInt8(ascii: ":"))
        let host = hostAndPort[..<(portStart ?? hostAndPort.endIndex)]
        let port = hostAndPort[(portStart ?? hostAndPort.endIndex)...]
        return userInfo + asciiHost(host)
            + (port.isEmpty ? "" : ":" + encoded(port.dropFirst(), allowing: portCharacters))
    }

    /// `host` in its IDNA form if it has non-ASCII letters and one exists, else as written.
    private static func asciiHost(_ host: Substring) -> String {
        guard !host.utf8.allSatisfy({ $0 < 0x80 }) else { return String(host) }
        var components = URLComponents()
        components.host = String(host)
        // Foundation falls back to percent-encoding a host that has no IDNA form.
        guard let encoded = components.encodedHost, !encoded.contains("%"), encoded.allSatisfy(\.isASCII) else {
            return String(host)
        }
        return encoded
    }

    /// `text` with every character not in `allowed` (nor an ASCII letter or digit, nor
    /// `- . _ ~`) percent-encoded as UTF-8, and every `%` that starts no escape encoded.
    private static func encoded(_ text: Substring, allowing allowed: ASCIISet) -> String {
        // Most URLs need nothing encoded: one pass over the bytes says so.
        if text.utf8.allSatisfy(allowed.contains) {
            return String(text)
        }
        let scalars = Array(text.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "%", index + 2 < scalars.count, isHex(scalars[index + 1]), isHex(scalars[index + 2]) {
                output.append(contentsOf: scalars[index...index + 2])
                index += 3
                continue
            }
            if scalar.isASCII, allowed.contains(UInt8(scalar.value)) {
                output.append(scalar)
            } else {
                for byte in String(scalar).utf8 {
                    output.append(contentsOf: "%\(String(byte, radix: 16, uppercase: true).leftPadded)".unicodeScalars)
                }
            }
            index += 1
        }
        return String(output)
    }

    private static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && scalar.properties.isASCIIHexDigit
    }

    private static let schemeCharacters = ASCIISet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-.")
    /// RFC 3986 unreserved characters: what every component allows.
    static let unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    /// RFC 3986 sub-delims.
    private static let subDelimiters = "!$&'()*+,;="
    /// The unreserved characters alone: what a port allows, and a template value needs no
    /// encoding if it has only these (``Template/percentEncoded(_:)``).
    static let unreservedCharacters = ASCIISet(unreserved)
    private static let portCharacters = unreservedCharacters
    private static let userInfoCharacters = ASCIISet(unreserved + subDelimiters + ":")
    private static let pathCharacters = ASCIISet(unreserved + subDelimiters + ":@/")
    /// Also the fragment's.
    static let queryCharacters = ASCIISet(unreserved + subDelimiters + ":@/?")

    /// ASCII characters a component allows as they are (never `%`, which starts an escape).
    struct ASCIISet {
        private var table = [Bool](repeating: false, count: 128)

        init(_ characters: String) {
            for byte in characters.utf8 where byte != UInt8(ascii: "%") { table[Int(byte)] = true }
        }

        func contains(_ byte: UInt8) -> Bool {
            byte < 0x80 && table[Int(byte)]
        }
    }
}

extension String {
    /// `A` → `0A`: two hex digits.
    fileprivate var leftPadded: String { count < 2 ? "0" + self : self }
}

extension URLCheck {
    /// Why a host, as written in a URL (ASCII, its escapes kept), would not resolve as
    /// written, or `nil`: a name of letters, digits, `-`, `_` and `.` (its IDNA form for other
    /// letters), an IPv4 address, or an IPv6 address in brackets. An escape (`%3A`) or a
    /// character such as `,` or `!` is allowed in a URL's host by RFC 3986 but names no host
    /// DNS or a hosts file knows: `http://127.0.0.1%3A8080/` would look up `127.0.0.1:8080`.
    static func unresolvableHostProblem(_ host: String) -> String? {
        // An IPv6 address (the only host with a ':', with or without its brackets).
        if host.utf8.contains(UInt8(ascii: ":")) || host.utf8.allSatisfy(resolvableHostCharacters.contains) {
            return nil
        }
        return
            "has the host '\(short: host)', which would not resolve as written: a host is letters, digits, '-', '_' and '.', or an IP address (an IPv6 one in brackets)"
    }

    private static let resolvableHostCharacters = ASCIISet(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
}
