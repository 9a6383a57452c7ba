import Foundation

extension Template {
    /// A filter after a reference, `{{login.token | base64}}`: applied to the value in order
    /// (`{{a.b | json | base64}}`), before the value is inserted (and escaped for where it goes).
    ///
    /// A filter that takes text reads a string as its text and any other value as its JSON.
    package enum Filter: String, Sendable, Hashable, CaseIterable {
        /// Base64 of the text's UTF-8 bytes, with padding.
        case base64
        /// URL-safe base64 (`-` and `_`, no padding), as JWTs use.
        case base64url
        /// Percent-encodes everything but letters, digits and `-._~`.
        case urlencode
        /// The value's JSON text (`"Ada"` with its quotes, `[1,2]`).
        case json
        /// The number of characters of a string, elements of a list or members of an object.
        case length
        /// SHA-256 of the text's UTF-8 bytes, as 64 lowercase hex digits.
        case sha256

        /// `value` through `filters`, in order. Within a run, the output of a filter applied to
        /// a value that holds a secret (`{{vars.password | base64}}`, a captured echo of a
        /// token `| json`) is a secret too: the run's ``Redactor/current`` learns it before the
        /// request that carries it is sent.
        static func apply(_ filters: [Filter], to value: JSONValue) throws(Refusal) -> JSONValue {
            var value = value
            let redactor = filters.isEmpty ? nil : Redactor.current
            let holdsSecret = redactor?.containsSecret(in: value.interpolated) ?? false
            for filter in filters {
                value = try filter.apply(to: value)
                // A count (`| length`) says how long a secret is, not what it is.
                if holdsSecret, case .string(let output) = value { redactor?.learn(output) }
            }
            return value
        }

        /// Why a filter cannot take a value.
        struct Refusal: Error {
            let reason: String
        }

        func apply(to value: JSONValue) throws(Refusal) -> JSONValue {
            switch self {
            case .base64:
                return .string(Data(value.interpolated.utf8).base64EncodedString())
            case .base64url:
                let base64 = Data(value.interpolated.utf8).base64EncodedString()
                return .string(
                    String(base64.compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 }))
            case .urlencode:
                return .string(Template.percentEncoded(value.interpolated))
            case .json:
                return .string(value.text)
            case .length:
                switch value {
                case .string(let text): return .integer(text.count)
                case .array(let elements): return .integer(elements.count)
                case .object(let members): return .integer(members.count)
                default: throw Refusal(reason: "'| length' takes text, a list or an object, got \(short: value.text)")
                }
            case .sha256:
                return .string(value.interpolated.sha256Hex)
            }
        }
    }
}
