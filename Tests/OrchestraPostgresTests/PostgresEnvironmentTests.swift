import Foundation
import OrchestraDurable
import TestSupport
import Testing

@testable import OrchestraPostgres

/// A URL without a password finds it where libpq clients do: `PGPASSWORD`, then the password
/// file (`PGPASSFILE`, `~/.pgpass`), which is not read if its group or others may read it.
@Suite("What a PostgreSQL URL leaves out, found where libpq finds it: passwords, TLS mode and CAs", .takesTurns)
struct PostgresEnvironmentTests {
    static let file = """
        # comments and lines of the wrong shape are skipped
        not:a:line
        db.internal:5432:app:app:first
        db.internal:5432:app:app:second
        *:*:*:reporter:any\\:thing\\\\
        10.0.0.1:6543:*:app:pooler
        """

    @Test func theFirstMatchingLineOfAPasswordFileWinsAndStarMatchesAnything() {
        let find = { (host: String, port: Int, database: String, user: String) in
            PostgresEnvironment.password(in: Self.file, host: host, port: port, database: database, user: user)
        }
        #expect(find("db.internal", 5432, "app", "app") == "first")
        #expect(find("db.internal", 5433, "app", "app") == nil)
        #expect(find("elsewhere", 1, "x", "reporter") == "any:thing\\")
        #expect(find("10.0.0.1", 6543, "other", "app") == "pooler")
        #expect(find("10.0.0.1", 6543, "other", "someone") == nil)
    }

    @Test func pgpasswordComesFirstThenThePasswordFileIfOnlyItsOwnerMayReadIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("pass").path
        try Self.file.write(toFile: path, atomically: true, encoding: .utf8)
        let lookup = { (environment: [String: String]) in
            PostgresEnvironment(environment: environment).password(
                host: "db.internal", port: 5432, database: "app", user: "app")
        }

        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(lookup(["PGPASSFILE": path]) == "first")
        #expect(lookup(["PGPASSFILE": path, "PGPASSWORD": "from-env"]) == "from-env")
        #expect(lookup(["PGPASSFILE": path, "PGPASSWORD": ""]) == "first")
        // ~/.pgpass when PGPASSFILE is not set.
        try FileManager.default.copyItem(atPath: path, toPath: folder.appendingPathComponent(".pgpass").path)
        #expect(lookup(["HOME": folder.path]) == "first")
        // Readable by its group: not used, as libpq does.
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        #expect(lookup(["PGPASSFILE": path]) == nil)
        #expect(lookup(["PGPASSFILE": folder.appendingPathComponent("none").path]) == nil)
        #expect(lookup([:]) == nil)
    }

    @Test func aURLsOwnPasswordIsUsedAsItIs() throws {
        let lookup = PostgresEnvironment(environment: ["PGPASSWORD": "from-env"])
        let given = try PostgresJobStore.Server(url: "postgres://app:in%40url@db:5432/app", environment: lookup)
        #expect(given.password == "in@url")
        let missing = try PostgresJobStore.Server(url: "postgres://app@db:5432/app", environment: lookup)
        #expect(missing.password == "from-env")
        let none = try PostgresJobStore.Server(
            url: "postgres://app@db/app", environment: PostgresEnvironment(environment: [:]))
        #expect(none.password == nil)
    }

    @Test func pgsslmodeAndPgsslrootcertApplyWhenTheURLGivesNeitherAndAreNamedWhenWrong() throws {
        let server = { (url: String, environment: [String: String]) throws(DurableError) in
            try PostgresJobStore.Server(url: url, environment: PostgresEnvironment(environment: environment))
        }
        #expect(try server("postgres://app@db/app", ["PGSSLMODE": "require"]).tls == .require)
        #expect(try server("postgres://app@db/app?sslmode=disable", ["PGSSLMODE": "require"]).tls == .disable)
        #expect(try server("postgres://app@db/app", ["PGSSLMODE": ""]).tls == .prefer, "empty: not set")
        #expect(try server("postgres://app@db/app", [:]).tls == .prefer)
        let wrongMode = #expect(throws: DurableError.self) {
            try server("postgres://app:secret@db/app", ["PGSSLMODE": "maybe"])
        }
        #expect(wrongMode?.message.contains("has no sslmode, and PGSSLMODE is 'maybe': expected disable") == true)
        #expect(wrongMode?.message.contains("secret") == false)
        // PGSSLROOTCERT names the CAs (and makes require verify-ca); the URL's sslrootcert wins.
        let missing = "/nonexistent/ca-\(UUID()).pem"
        let wrongFile = #expect(throws: DurableError.self) {
            try server("postgres://app@db/app?sslmode=require", ["PGSSLROOTCERT": missing])
        }
        #expect(
            wrongFile?.message.contains(
                "has no sslrootcert, and PGSSLROOTCERT is '\(missing)': no PEM certificate can be read") == true)
        let system = try server("postgres://app@db/app?sslmode=require&sslrootcert=system", ["PGSSLROOTCERT": missing])
        #expect(system.tls == .require && system.rootCertificates == nil)
    }
}
