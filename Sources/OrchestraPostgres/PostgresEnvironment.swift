import Foundation

/// What a PostgreSQL URL leaves out and a libpq client (`psql`) finds in its environment.
///
/// - The password of a URL without one: the `PGPASSWORD` environment variable, else the password
///   file (`PGPASSFILE`, by default `~/.pgpass`): lines of `host:port:database:user:password`,
///   each field `*` for any value, `\:` and `\\` for a colon and a backslash, `#` starting a
///   comment; the first line that matches wins. As libpq does, a password file that its group
///   or others may read is not used. So that a password need not be on the command line, where
///   every user of the machine sees it (`ps`), nor in a shell's history.
/// - The TLS mode and the CAs when the URL gives no `sslmode` or `sslrootcert`: `PGSSLMODE` and
///   `PGSSLROOTCERT`; the CAs that verify the server's certificate when neither names any:
///   `~/.postgresql/root.crt` if it exists.
struct PostgresEnvironment {
    var environment: [String: String]

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// The password for `user` on `database` at `host:port`, or `nil`.
    func password(host: String, port: Int, database: String, user: String) -> String? {
        if let password = value(of: "PGPASSWORD") { return password }
        guard let path = passwordFile, Self.isPrivate(path),
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return nil }
        return Self.password(in: text, host: host, port: port, database: database, user: user)
    }

    /// The environment variable `name`, if set and not empty (libpq ignores an empty one).
    func value(of name: String) -> String? {
        environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `~/.postgresql/root.crt` in `HOME`, if it exists.
    var rootCertificateFile: String? {
        guard let home = value(of: "HOME") else { return nil }
        let file = (home as NSString).appendingPathComponent(".postgresql/root.crt")
        return FileManager.default.fileExists(atPath: file) ? file : nil
    }

    /// `PGPASSFILE`, or `~/.pgpass` in `HOME`.
    var passwordFile: String? {
        if let file = value(of: "PGPASSFILE") { return file }
        guard let home = value(of: "HOME") else { return nil }
        return (home as NSString).appendingPathComponent(".pgpass")
    }

    /// Whether only its owner may read or write `path` (libpq refuses a password file with any
    /// permission for its group or others).
    static func isPrivate(_ path: String) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let permissions = attributes[.posixPermissions] as? Int
        else { return false }
        return permissions & 0o077 == 0
    }

    /// The password of the first line of a password file's `text` that matches.
    static func password(in text: String, host: String, port: Int, database: String, user: String) -> String? {
        let wanted = [host, "\(port)", database, user]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let fields = Self.fields(of: line)
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// A line's fields, split at unescaped colons, `\:` and `\\` unescaped.
    static func fields(of line: Substring) -> [String] {
        var fields: [String] = []
        var field = ""
        var escaped = false
        for character in line {
            if escaped {
                field.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append(field)
                field = ""
            } else {
                field.append(character)
            }
        }
        fields.append(field)
        return fields
    }
}
