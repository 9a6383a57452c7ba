import Foundation

extension URLCheck {
    /// The credentials written in a URL's user information (`http://user:password@host/`),
    /// percent-decoded: sent as `Authorization: Basic base64(user:password)`, as curl does.
    struct Credentials: Sendable, Hashable {
        var user: String
        /// Empty when the URL has no `:` after the user (`http://user@host/`).
        var password: String
    }

    /// What every URL shows in place of its user information: `http://***@host/`.
    ///
    /// The user information is a credential (a user and a password, or an API key as the user,
    /// as some services take it), so none of it is shown: not in the step line, a message,
    /// `--output json`, the reports, the traces or the `--state` file. The mask tells the
    /// reader that the URL carried credentials.
    static let maskedUserInfo = Redactor.mask

    /// `text` with the user information of every URL in it replaced by ``maskedUserInfo``:
    /// `GET http://ada:s3cret@x.test/a` → `GET http://***@x.test/a`.
    ///
    /// A URL is found by its `://`; its authority runs to the next `/`, `?`, `#`, white space
    /// or quote, and its user information is what comes before the authority's last `@`.
    /// Works on a template's text as written (`http://{{vars.user}}:{{vars.pw}}@host`) as
    /// well as on a URL as sent.
    ///
    /// Complexity: linear in the length of `text`; one pass over its bytes when it has no `@`
    /// (most text), without a copy.
    static func maskingUserInfo(_ text: String) -> String {
        let bytes = text.utf8
        guard bytes.contains(UInt8(ascii: "@")) else { return text }
        var output = ""
        var copied = bytes.startIndex
        var search = bytes.startIndex
        while let separator = firstSeparator(in: bytes[search...]) {
            let authorityStart = bytes.index(separator, offsetBy: 3)
            let authorityEnd = bytes[authorityStart...].firstIndex(where: endsAuthority) ?? bytes.endIndex
            if let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
                output += text[copied..<authorityStart]
                output += maskedUserInfo
                copied = at
            }
            search = authorityEnd
        }
        guard copied != bytes.startIndex else { return text }
        output += text[copied...]
        return output
    }

    /// The first `://` in `bytes`.
    private static func firstSeparator(in bytes: Substring.UTF8View) -> String.Index? {
        var start = bytes.startIndex
        while let colon = bytes[start...].firstIndex(of: UInt8(ascii: ":")) {
            if bytes[colon...].starts(with: "://".utf8) { return colon }
            start = bytes.index(after: colon)
        }
        return nil
    }

    /// Whether `byte` ends an authority found in text: a delimiter of the URL's next component,
    /// or what ends a URL in prose (white space, a quote, `<` `>`).
    private static func endsAuthority(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "\t"),
            UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "<"),
            UInt8(ascii: ">"):
            true
        default:
            false
        }
    }

    /// The URL as sent without its user information, and the credentials it held.
    ///
    /// `url` is a URL as ``sendable(_:)`` gives it: checked and escaped, so its user
    /// information is ASCII, with its other characters percent-encoded. The user is what
    /// comes before its first `:`, the password what follows; both are percent-decoded
    /// (`us%40er` is the user `us@er`).
    ///
    /// - Returns: `url` itself and `nil` when it has no user information.
    /// - Throws: ``Refusal`` when the user information cannot be sent as basic auth: an escape
    ///   that is not UTF-8, a user with a `:` (`%3A`), or a line break.
    static func splittingCredentials(_ url: String) -> Result<(url: String, credentials: Credentials?), Refusal> {
        let bytes = url.utf8
        guard bytes.contains(UInt8(ascii: "@")), let separator = firstSeparator(in: url[...].utf8) else {
            return .success((url, nil))
        }
        let authorityStart = bytes.index(separator, offsetBy: 3)
        let authorityEnd =
            bytes[authorityStart...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            } ?? bytes.endIndex
        guard let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else {
            return .success((url, nil))
        }
        let userInfo = url[authorityStart..<at]
        let colon = userInfo.utf8.firstIndex(of: UInt8(ascii: ":"))
        let encodedUser = userInfo[..<(colon ?? userInfo.endIndex)]
        let encodedPassword = colon.map { userInfo[userInfo.utf8.index(after: $0)...] } ?? ""
        guard let user = encodedUser.removingPercentEncoding, let password = encodedPassword.removingPercentEncoding
        else {
            return .failure(Refusal(reason: "has user information whose escapes are not UTF-8"))
        }
        guard !user.contains(":") else {
            return .failure(
                Refusal(reason: "has a user with ':' (%3A) in its user information, which basic auth cannot send"))
        }
        guard !(user + password).contains(where: \.isNewline) else {
            return .failure(Refusal(reason: "has a line break in its user information; refusing to send it"))
        }
        let stripped = String(url[..<authorityStart]) + url[bytes.index(after: at)...]
        return .success((stripped, Credentials(user: user, password: password)))
    }
}
