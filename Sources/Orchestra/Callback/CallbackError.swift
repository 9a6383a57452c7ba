/// Thrown by ``withCallback(isolation:diagnostics:onCancel:fileID:line:_:)`` when the legacy
/// API dropped its completion handler without calling it.
///
/// ```swift
/// do { try await withCallback { legacyFetch(completion: $0.resume) } }
/// catch CallbackError.abandoned { … }                 // or: error.code == .abandoned
/// ```
public struct CallbackError: Error, Sendable, CustomStringConvertible {
    /// The reason, comparable with `==`; more codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// Every reference to the completion was released and it was never called.
        public static let abandoned = Code("abandoned")
    }

    /// Why the callback failed.
    public var code: Code
    /// A sentence naming the call site and what happened.
    public var message: String

    /// An error with its `code` and a `message`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// An error with code ``Code/abandoned``, for matching: `catch CallbackError.abandoned`.
    public static let abandoned = CallbackError(
        code: .abandoned,
        message: "the completion handler was released without being called"
    )

    /// `CallbackError.code: message`.
    public var description: String { "CallbackError.\(code): \(message)" }

    /// Matches any error whose code equals the pattern's code.
    public static func ~= (pattern: CallbackError, error: any Error) -> Bool {
        (error as? CallbackError)?.code == pattern.code
    }
}
