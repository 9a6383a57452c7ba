/// A credential, such as an OAuth access token, with how long it stays valid.
public struct AuthToken: Sendable, Hashable, CustomStringConvertible {
    /// The credential itself (what goes into the `Authorization` header).
    public var value: String
    /// How long the token is valid from the moment the refresher receives it; `nil` when the
    /// server does not say (it is then refreshed only after a rejection). It is renewed a
    /// margin before it ends, at most half of it (see ``TokenRefresher``).
    public var lifetime: Duration?

    /// A token `value`, valid for `lifetime` from when the refresher receives it (`nil`: unknown).
    public init(_ value: String, lifetime: Duration? = nil) {
        self.value = value
        self.lifetime = lifetime
    }

    /// Never prints the credential.
    public var description: String {
        "AuthToken(\(value.count) characters\(lifetime.map { ", lifetime \($0)" } ?? ""))"
    }
}

/// A token as handed to one request: its value and the version of the token it is, so that a
/// rejection can say which token was rejected (``TokenRefresher/token(replacing:)``).
public struct SignedToken: Sendable, Hashable, CustomStringConvertible {
    /// The credential (what goes into the `Authorization` header).
    public let value: String
    /// 0 for the initial token, then one more for each refresh.
    public let version: Int

    /// A token `value` and its `version` (0 for the initial token).
    public init(value: String, version: Int) {
        self.value = value
        self.version = version
    }

    /// Names the version only; never prints the credential.
    public var description: String { "SignedToken(version \(version))" }
}

/// Why a token refresher could not give a token.
public struct AuthenticationError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, comparable with `==`; more codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as messages show it.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// The refresh failed; it is final for that token: every request waiting for it gets
        /// this error, and no request triggers another refresh of the same token. The user
        /// must authenticate again (``TokenRefresher/reset(to:)``).
        public static let refreshFailed = Code("refreshFailed")
        /// More refreshes of rejected tokens (or of tokens that arrived already expired) than
        /// allowed in the time window: a server that keeps rejecting fresh tokens, or a refresh
        /// that returns an invalid one. Stopped instead of looping; the message says which.
        /// Renewals of tokens that reached their margin or their end never count.
        public static let excessiveRefresh = Code("excessiveRefresh")
    }

    /// What went wrong.
    public var code: Code
    /// What happened, in words.
    public var message: String
    /// The refresh's own error, for `.refreshFailed`.
    public var underlying: (any Error)?

    /// An error with its `code`, a `message`, and the error that caused it, if any.
    public init(code: Code, message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// `AuthenticationError(code): message`.
    public var description: String { "AuthenticationError(\(code)): \(message)" }
}
