import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An HTTPS server on 127.0.0.1 with a certificate of ``TestCertificates``: it answers every
/// request `200` with `hello over TLS`; with `requiringClientCertificate`, only a client that
/// presents a certificate the client CA signed gets through the handshake.
package enum TLSTestServer {
    /// Runs `body` with the server's base URL (`https://localhost:PORT`), then stops it.
    package static func with<T: Sendable>(
        _ certificates: TestCertificates, requiringClientCertificate: Bool = false,
        _ body: (_ baseURL: String) async throws -> T
    ) async throws -> T {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificates.serverCertificate.path).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificates.serverKey.path, format: .pem)))
        if requiringClientCertificate {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificates.clientCA.path))
        }
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Hello())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        let result: Result<T, any Error>
        do {
            result = .success(try await body("https://localhost:\(port)"))
        } catch {
            result = .failure(error)
        }
        try? await channel.close()
        return try result.get()
    }

    private final class Hello: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            let body = ByteBuffer(string: "hello over TLS")
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "\(body.readableBytes)")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil
            )
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
