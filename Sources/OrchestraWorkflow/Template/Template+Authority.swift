extension Template {
    /// Where a value goes in a URL being rendered, read from the text written before it: in
    /// the host or the port (its authority, after any user information), or anywhere else.
    ///
    /// The text is fed piece by piece as it is rendered (one pass over it in all); a value in
    /// the authority is in the user information when a later literal of the template has an
    /// `@` before the authority ends (`http://{{vars.user}}:{{vars.pw}}@host/`).
    struct URLPosition {
        enum Part: Equatable {
            /// Before `://`: the scheme (or a URL without an authority).
            case scheme(matched: Int)
            /// Between `://` and the next `/`, `?` or `#`.
            case authority
            /// The path, the query or the fragment.
            case rest
        }

        private(set) var part = Part.scheme(matched: 0)
        /// In the authority: after a `:` outside brackets (of the host part).
        private(set) var inPort = false
        /// In the authority: inside `[…]`.
        private var inBrackets = false

        mutating func feed(_ text: some StringProtocol) {
            for byte in text.utf8 {
                feed(byte)
                if part == .rest { return }
            }
        }

        private mutating func feed(_ byte: UInt8) {
            switch part {
            case .scheme(let matched):
                // Looking for "://"; a '/', '?' or '#' before it: no authority.
                let separator: [UInt8] = [UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "/")]
                if byte == separator[matched] {
                    part = matched == 2 ? .authority : .scheme(matched: matched + 1)
                } else if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                    part = .rest
                } else {
                    part = .scheme(matched: byte == UInt8(ascii: ":") ? 1 : 0)
                }
            case .authority:
                switch byte {
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): part = .rest
                case UInt8(ascii: "@"):
                    // What came before was the user information.
                    inPort = false
                    inBrackets = false
                case UInt8(ascii: "["): inBrackets = true
                case UInt8(ascii: "]"): inBrackets = false
                case UInt8(ascii: ":") where !inBrackets: inPort = true
                default: break
                }
            case .rest:
                break
            }
        }

        /// Whether a value inserted now goes into the host or the port, given the literal
        /// segments after it: not the user information (an `@` follows before the authority
        /// ends).
        func isHostOrPort(followedBy segments: ArraySlice<Segment>) -> Bool {
            guard part == .authority else { return false }
            for case .literal(let text) in segments {
                for byte in text.utf8 {
                    switch byte {
                    case UInt8(ascii: "@"): return false
                    case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): return true
                    default: continue
                    }
                }
            }
            return true
        }
    }

    /// Why `value`, inserted as is where `position` says (the host or the port of a URL), is
    /// not host text, or `nil` if it is. `endsPort`: nothing follows it in the authority.
    ///
    /// A host is a name, an IPv4 address or an IPv6 address in brackets, with an optional
    /// `:port` (1 to 65535); it cannot hold `/`, `?`, `#` or `@` (which would end it, or make
    /// what came before a user), `\`, `%`, white space or a control character. In the port,
    /// digits only (the URL's check then says whether it is 1 to 65535). One pass over the
    /// value.
    static func hostProblem(_ value: String, in position: URLPosition, endsPort: Bool) -> String? {
        if position.inPort {
            // Its range is the URL's check (`has port 0; a port is 1 to 65535`), once the
            // whole port is there.
            guard value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                return "a port is digits"
            }
            return nil
        }
        var colons = 0
        var inBrackets = false
        var bracketed = false
        var portStart: String.Index?
        let bytes = value.utf8
        for index in bytes.indices {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "@"), UInt8(ascii: "\\"),
                UInt8(ascii: "%"):
                return "a host cannot contain '\(Character(Unicode.Scalar(byte)))'"
            case 0..<0x21, 0x7F:
                return "a host cannot contain white space or a control character"
            case UInt8(ascii: "["):
                guard index == bytes.startIndex, !bracketed else { return "'[' can only start an IPv6 address" }
                inBrackets = true
            case UInt8(ascii: "]"):
                guard inBrackets else { return "']' without '['" }
                inBrackets = false
                bracketed = true
            case UInt8(ascii: ":") where !inBrackets:
                colons += 1
                portStart = bytes.index(after: index)
            default:
                if inBrackets, !(byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".") || byte.isHexDigit) {
                    return "an IPv6 address in brackets is hexadecimal digits, ':' and '.'"
                }
                if bracketed, portStart == nil { return "only ':port' can follow an IPv6 address in brackets" }
            }
        }
        if inBrackets { return "'[' without ']'" }
        if colons > 1 { return "an IPv6 address goes in brackets: [::1]" }
        if let portStart {
            let port = value[portStart...]
            guard !port.isEmpty, port.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                return "a port is digits"
            }
            if endsPort, !(1...65_535).contains(Int(port) ?? 0) { return "a port is 1 to 65535" }
        }
        return nil
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
