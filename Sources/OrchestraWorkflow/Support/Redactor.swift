import Foundation
import HTTPTypes
import OrchestraHTTP

/// Replaces secrets with `***` in what a run shows: reports, traces, `--verbose` output and
/// error messages.
///
/// The secrets are the values of the variables a workflow lists under `secrets:`; each is
/// also redacted in the forms a request writes it in: percent-encoded (a URL), form-encoded
/// (a `form:` body) and JSON-escaped (a JSON body). The values of
/// ``sensitiveHeaders`` are redacted by name, whatever they hold.
///
/// ```swift
/// let redactor = Redactor(secrets: ["s3cret"])
/// redactor.redact("http://x.test/?key=s3cret")    // "http://x.test/?key=***"
/// ```
package struct Redactor: Sendable {
    /// What a secret is replaced with.
    package static let mask = "***"

    /// Headers whose values are always redacted: credentials and session cookies.
    package static let sensitiveHeaders: Set<HTTPField.Name> = [
        .authorization, .proxyAuthorization, .cookie, .setCookie,
    ]

    /// The texts to replace, longest first, so a secret that contains another is replaced whole.
    private let secrets: [String]

    /// A redactor of `secrets` (empty values are ignored).
    package init(secrets: some Sequence<String>) {
        var forms: Set<String> = []
        for secret in secrets where !secret.isEmpty {
            forms.insert(secret)
            forms.insert(Template.percentEncoded(secret))
            forms.insert(RenderedRequest.formEncoded(secret))
            forms.insert(String(JSONValue.string(secret).text.dropFirst().dropLast()))
        }
        self.secrets = forms.sorted { $0.count != $1.count ? $0.count > $1.count : $0 < $1 }
    }

    /// Whether it has no secret (``redact(_:)`` returns its argument).
    package var isEmpty: Bool { secrets.isEmpty }

    /// `text` with every secret replaced by ``mask``.
    package func redact(_ text: String) -> String {
        var text = text
        for secret in secrets where text.contains(secret) {
            text = text.replacingOccurrences(of: secret, with: Self.mask)
        }
        return text
    }

    /// `value` with every secret in its strings (not its keys) replaced.
    package func redact(_ value: JSONValue) -> JSONValue {
        guard !isEmpty else { return value }
        switch value {
        case .string(let text): return .string(redact(text))
        case .array(let elements): return .array(elements.map(redact))
        case .object(let members): return .object(members.map { JSONValue.Member($0.key, redact($0.value)) })
        case .null, .bool, .integer, .number: return value
        }
    }

    /// The value of the header `name` as shown: ``mask`` for a ``sensitiveHeaders`` one,
    /// otherwise with its secrets replaced.
    package func redact(header name: HTTPField.Name, value: String) -> String {
        Self.sensitiveHeaders.contains(name) ? Self.mask : redact(value)
    }

    /// `report` with every secret replaced in what it shows: its URL, error, captures,
    /// assertions, redirects and elements.
    package func redact(_ report: StepReport) -> StepReport {
        guard !isEmpty else { return report }
        var report = report
        report.url = redact(report.url)
        report.error = report.error.map(redact)
        report.captures = report.captures.map { JSONValue.Member($0.key, redact($0.value)) }
        report.assertions = report.assertions.map { result in
            var result = result
            result.expected = redact(result.expected)
            result.actual = result.actual.map(redact)
            result.reason = result.reason.map(redact)
            return result
        }
        report.redirects = report.redirects.map { HTTPRedirect(status: $0.status, location: redact($0.location)) }
        report.items = report.items?.map(redact)
        return report
    }
}
