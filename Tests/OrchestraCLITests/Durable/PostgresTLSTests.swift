import Foundation
import NetworkTestSupport
import OrchestraTestKit
import TestSupport
import Testing

/// `--state postgres://…?sslmode=…&sslrootcert=…` as libpq reads them, against a server of its
/// own whose certificate a private CA signed (as a company's database's is): `prefer` (the
/// default) and `require` encrypt without checking the certificate, `verify-ca` and
/// `verify-full` check it against `sslrootcert` (else `~/.postgresql/root.crt`, else the
/// system's CAs). A certificate that cannot be verified is a setting to change: exit 2 at once,
/// in words, never waited for as an outage. Before, the default `prefer` checked the
/// certificate against the system's CAs, and a server with TLS on and a private CA (Debian's
/// default `ssl = on` with its own certificate) could only be used with `sslmode=disable`.
@Suite(
    "PostgreSQL over TLS with a private CA: sslmode and sslrootcert",
    .serialized, PostgresCluster.ownClusters, .timeLimit(.minutes(5)), .takesTurns)
struct PostgresTLSTests {
    /// `orchestra status` of a schema that holds no store: what it says tells whether it
    /// connected (and logged in) or not.
    static func status(_ url: String, home: URL, environment: [String: String] = [:]) async throws -> ProcessOutput {
        try await OrchestraExecutable.run(
            ["status", "--state", url, "--schema", "no_store_here"],
            environment: environment.merging(["HOME": home.path]) { given, _ in given }, limit: .seconds(60))
    }

    static let connected = "there is no Orchestra store in schema 'no_store_here'"

    @Test func sslmodesAgainstAServerWhoseCertificateAPrivateCASigned() async throws {
        let certificates = try TestCertificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.folder) }
        // A home without ~/.postgresql/root.crt.
        let home = certificates.folder.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try await PostgresCluster.withOwnCluster(
            tls: (certificates.serverCertificate.path, certificates.serverKey.path)
        ) { cluster in
            let ca = certificates.ca.path
            // Encrypted, not verified: the default, and require.
            for mode in ["", "?sslmode=prefer", "?sslmode=require", "?sslmode=disable"] {
                let status = try await Self.status(cluster.url + mode, home: home)
                #expect(status.stderr.contains(Self.connected), "\(mode): \(status)")
            }
            // Verified with the CA: by IP address (the certificate names 127.0.0.1) and by name.
            let byName = cluster.url.replacingOccurrences(of: "@127.0.0.1:", with: "@localhost:")
            for url in [
                cluster.url + "?sslmode=verify-full&sslrootcert=\(ca)",
                byName + "?sslmode=verify-full&sslrootcert=\(ca)",
                cluster.url + "?sslmode=verify-ca&sslrootcert=\(ca)",
            ] {
                let status = try await Self.status(url, home: home)
                #expect(status.stderr.contains(Self.connected), "\(url): \(status)")
            }
            // ~/.postgresql/root.crt when the URL names no sslrootcert.
            let trusting = certificates.folder.appendingPathComponent("trusting")
            try FileManager.default.createDirectory(
                at: trusting.appendingPathComponent(".postgresql"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                at: certificates.ca, to: trusting.appendingPathComponent(".postgresql/root.crt"))
            let fromHome = try await Self.status(cluster.url + "?sslmode=verify-full", home: trusting)
            #expect(fromHome.stderr.contains(Self.connected), "\(fromHome)")
            // But not when the URL asks for the system's CAs.
            let system = try await Self.status(cluster.url + "?sslmode=verify-full&sslrootcert=system", home: trusting)
            #expect(system.status == 2, "\(system)")
            #expect(system.stderr.contains("its TLS certificate could not be verified"), "\(system)")

            // Not verified (the system's CAs did not sign it): exit 2 at once, in words.
            let refused = try await Self.status(cluster.url + "?sslmode=verify-full", home: home)
            #expect(refused.status == 2, "\(refused)")
            #expect(refused.stderr.contains("its TLS certificate could not be verified"), "\(refused)")
            #expect(!refused.stderr.contains("NIOSSL") && !refused.stderr.contains("BoringSSL"), "\(refused)")
            // The system's CAs asked for by name; and require with an sslrootcert is verify-ca,
            // as in libpq: checked against that file (another CA's here).
            for url in [
                cluster.url + "?sslmode=verify-full&sslrootcert=system",
                cluster.url + "?sslmode=require&sslrootcert=\(certificates.clientCA.path)",
            ] {
                let status = try await Self.status(url, home: home)
                #expect(status.status == 2, "\(url): \(status)")
                #expect(status.stderr.contains("its TLS certificate could not be verified"), "\(url): \(status)")
            }
            // PGSSLMODE and PGSSLROOTCERT, as libpq reads them, when the URL gives neither.
            let fromEnvironment = try await Self.status(
                cluster.url, home: home, environment: ["PGSSLMODE": "verify-full", "PGSSLROOTCERT": ca])
            #expect(fromEnvironment.stderr.contains(Self.connected), "\(fromEnvironment)")
            let unverified = try await Self.status(cluster.url, home: home, environment: ["PGSSLMODE": "verify-full"])
            #expect(unverified.status == 2, "\(unverified)")
            #expect(unverified.stderr.contains("its TLS certificate could not be verified"), "\(unverified)")
            let urlWins = try await Self.status(
                cluster.url + "?sslmode=require", home: home, environment: ["PGSSLMODE": "verify-full"])
            #expect(urlWins.stderr.contains(Self.connected), "\(urlWins)")
            // A worker does not wait for it as for an outage.
            let worker = try await OrchestraExecutable.run(
                ["worker", "--state", cluster.url + "?sslmode=verify-full"], environment: ["HOME": home.path],
                limit: .seconds(60))
            #expect(worker.status == 2, "\(worker)")
            #expect(!worker.stderr.contains("trying again"), "\(worker)")
            // A file that holds no certificate: said before anything is sent.
            let notPEM = try await Self.status(
                cluster.url + "?sslmode=verify-full&sslrootcert=\(certificates.notPEM.path)", home: home)
            #expect(notPEM.status == 2, "\(notPEM)")
            #expect(notPEM.stderr.contains("no PEM certificate can be read from that file"), "\(notPEM)")
            #expect(!notPEM.stderr.contains("orchestra-test"), "the password was printed: \(notPEM)")
        }
    }
}
