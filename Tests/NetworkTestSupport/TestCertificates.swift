import Crypto
import Foundation
import SwiftASN1
import X509

/// A CA, a server certificate it signed for `localhost` and 127.0.0.1, and a second CA with a
/// client certificate, made at test time and written as PEM files into a fresh folder.
package struct TestCertificates: Sendable {
    package let folder: URL
    /// The server's CA: what `--cacert` trusts.
    package let ca: URL
    package let serverCertificate: URL
    package let serverKey: URL
    /// The CA the server trusts for client certificates.
    package let clientCA: URL
    package let clientCertificate: URL
    package let clientKey: URL
    /// A file that is not PEM.
    package let notPEM: URL

    /// Makes them in a new folder of the temporary directory.
    package static func make() throws -> TestCertificates {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-tls-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ text: String, _ name: String) throws -> URL {
            let url = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url
        }
        let (caCertificate, caKey, caName) = try authority("Orchestra Test CA")
        let serverKey = P256.Signing.PrivateKey()
        let server = try leaf(
            "localhost", key: serverKey, issuer: caName, issuerKey: caKey,
            names: [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))],
            usage: .serverAuth)
        let (clientCACertificate, clientCAKey, clientCAName) = try authority("Orchestra Test Client CA")
        let clientKey = P256.Signing.PrivateKey()
        let client = try leaf(
            "orchestra-test-client", key: clientKey, issuer: clientCAName, issuerKey: clientCAKey, names: [],
            usage: .clientAuth)
        return TestCertificates(
            folder: folder,
            ca: try write(try caCertificate.serializeAsPEM().pemString, "ca.pem"),
            serverCertificate: try write(try server.serializeAsPEM().pemString, "server.pem"),
            serverKey: try write(serverKey.pemRepresentation, "server.key"),
            clientCA: try write(try clientCACertificate.serializeAsPEM().pemString, "client-ca.pem"),
            clientCertificate: try write(try client.serializeAsPEM().pemString, "client.pem"),
            clientKey: try write(clientKey.pemRepresentation, "client.key"),
            notPEM: try write("not a certificate\n", "not-pem.pem"))
    }

    /// Removes the folder.
    package func remove() {
        try? FileManager.default.removeItem(at: folder)
    }

    private static func authority(
        _ name: String
    ) throws -> (Certificate, P256.Signing.PrivateKey, DistinguishedName) {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(key))
        return (certificate, key, subject)
    }

    private static func leaf(
        _ name: String, key: P256.Signing.PrivateKey, issuer: DistinguishedName, issuerKey: P256.Signing.PrivateKey,
        names: [GeneralName], usage: ExtendedKeyUsage.Usage
    ) throws -> Certificate {
        let now = Date()
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: issuer,
            subject: try DistinguishedName { CommonName(name) }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if !names.isEmpty { SubjectAlternativeNames(names) }
            },
            issuerPrivateKey: .init(issuerKey))
    }
}
