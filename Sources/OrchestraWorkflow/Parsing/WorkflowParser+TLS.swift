import Foundation

/// `tls:` at the top of a workflow: whom the run trusts and which certificate it presents.
///
/// ```yaml
/// tls:
///   cacert: certs/corp-ca.pem     # trusted besides the system's roots
///   cert: certs/me.pem            # a client certificate (mutual TLS), with its key
///   key: certs/me.key
///   insecure: false               # true: no verification (as curl -k)
/// ```
///
/// Paths are relative to the workflow file's folder. The command's `--cacert`, `--cert`,
/// `--key` and `--insecure` override them.
package struct WorkflowTLS: Sendable, Equatable {
    package var cacert: URL?
    package var insecure: Bool?
    package var cert: URL?
    package var key: URL?

    package init(cacert: URL? = nil, insecure: Bool? = nil, cert: URL? = nil, key: URL? = nil) {
        self.cacert = cacert
        self.insecure = insecure
        self.cert = cert
        self.key = key
    }
}

extension WorkflowParser {
    static let tlsFields = ["cacert", "insecure", "cert", "key"]

    /// The `tls:` block: each path a readable file; `cert` and `key` together.
    mutating func tls(_ node: Node) -> WorkflowTLS? {
        guard let entries = reader.entries(node, allowed: Self.tlsFields, step: nil, field: "tls") else { return nil }
        var tls = WorkflowTLS()
        for (key, value) in entries {
            let field = "tls.\(key)"
            switch key {
            case "cacert": tls.cacert = bodyFile(value, step: nil, field: field)?.url
            case "cert": tls.cert = bodyFile(value, step: nil, field: field)?.url
            case "key": tls.key = bodyFile(value, step: nil, field: field)?.url
            case "insecure": tls.insecure = reader.bool(value, step: nil, field: field)
            default: break
            }
        }
        let keys = Set(entries.map(\.0))
        if keys.contains("cert") != keys.contains("key") {
            reader.fail(
                .missingField,
                keys.contains("cert")
                    ? "'cert' needs 'key', the client certificate's private key"
                    : "'key' needs 'cert', the client certificate it belongs to",
                at: node, step: nil, field: "tls")
        }
        return tls
    }
}
