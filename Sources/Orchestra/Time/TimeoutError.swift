/// Thrown when work did not finish within its time limit.
///
/// ```swift
/// catch let error as TimeoutError where error.code == .timedOut { … }
/// ```
public struct TimeoutError: Error, Sendable, CustomStringConvertible {
    /// The reason, comparable with `==`; more codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// The time limit passed before the work finished.
        public static let timedOut = Code("timedOut")
    }

    /// Which limit ran out.
    public var code: Code
    /// The time limit that passed, when the limit was given as a duration.
    public var timeout: Duration?
    /// What timed out, when the caller named it (a node, a request), else `nil`.
    public var subject: String?

    /// An error saying that `subject` ran out of `timeout`.
    public init(code: Code = .timedOut, timeout: Duration?, subject: String? = nil) {
        self.code = code
        self.timeout = timeout
        self.subject = subject
    }

    /// Names the subject and the limit.
    public var description: String {
        let what = subject.map { "\($0) " } ?? ""
        if let timeout {
            return "\(what)timed out after \(timeout)"
        }
        return "\(what)did not finish before its deadline"
    }
}
