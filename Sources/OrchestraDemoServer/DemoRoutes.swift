import Foundation
import Hummingbird
import Logging
import Orchestra

enum DemoRoutes {
    static let quietLogger: Logger = {
        var logger = Logger(label: "orchestra-demo-server")
        logger.logLevel = .critical
        return logger
    }()

    struct Counting: RouterMiddleware {
        typealias Context = BasicRequestContext
        let state: DemoServerState

        func handle(
            _ request: Request, context: Context, next: (Request, Context) async throws -> Response
        ) async throws -> Response {
            state.enter(path: request.uri.path)
            defer { state.leave() }
            return try await next(request, context)
        }
    }

    static func router(state: DemoServerState) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: Counting(state: state))

        router.get("/payload/:bytes") { request, context -> Response in
            let bytes = try context.parameters.require("bytes", as: Int.self)
            let latency = request.uri.queryParameters.get("latency_ms", as: Int.self) ?? 0
            return try await payload(bytes: bytes, latency: .milliseconds(latency), state: state)
        }
        router.get("/images/:index") { request, context -> Response in
            let index = try context.parameters.require("index", as: Int.self)
            guard DemoServer.images.indices.contains(index) else {
                throw HTTPError(.notFound, message: "no image \(index)")
            }
            let image = DemoServer.images[index]
            let latency = request.uri.queryParameters.get("latency_ms", as: Int.self).map { Duration.milliseconds($0) }
            return try await payload(bytes: image.bytes, latency: latency ?? image.latency, state: state)
        }
        router.post("/login") { _, _ -> Response in
            tokenResponse(state.issueToken(refresh: false), state: state)
        }
        router.post("/refresh") { _, _ -> Response in
            if state.configuration.refreshFails {
                state.counters.withLock { $0.refreshCalls += 1 }
                return Response(
                    status: .internalServerError,
                    body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\"refresh_failed\"}")))
            }
            return tokenResponse(state.issueToken(refresh: true), state: state)
        }
        router.get("/protected") { request, _ -> Response in
            guard state.isValid(bearer(request)) else {
                return Response(
                    status: .unauthorized, body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\"token_expired\"}")))
            }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "{\"ok\":true}")))
        }
        router.get("/protected-200") { request, _ -> Response in
            let body = state.isValid(bearer(request)) ? "{\"ok\":true}" : "{\"error\":\"token_expired\"}"
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        router.get("/flaky/:key") { request, context -> Response in
            let key = try context.parameters.require("key")
            let failures = request.uri.queryParameters.get("failures", as: Int.self) ?? 1
            let call = state.counters.withLock { counters -> Int in
                counters.flakyCalls[key, default: 0] += 1
                return counters.flakyCalls[key]!
            }
            if call <= failures {
                return Response(status: .serviceUnavailable, headers: [.retryAfter: "1"])
            }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "recovered after \(failures)")))
        }
        for method in [HTTPRequest.Method.get, .post] {
            router.on("/gated/:name", method: method) { _, context -> String in
                try await state.gate.pass()
                return try context.parameters.require("name")
            }
        }
        router.get("/hang") { _, _ -> String in
            try await state.shutdown.wait()
            return "shutting down"
        }
        router.get("/echo/:text") { _, context -> String in
            try context.parameters.require("text")
        }
        router.get("/album") { request, _ -> Response in
            if let latency = request.uri.queryParameters.get("latency_ms", as: Int.self) {
                try await state.delay(.milliseconds(latency))
            }
            let images = DemoServer.images.enumerated().map { index, image in
                "{\"index\":\(index),\"path\":\"/images/\(index)\",\"bytes\":\(image.bytes)}"
            }
            return json(
                "{\"title\":\"Gallery\",\"count\":\(images.count),\"images\":[\(images.joined(separator: ","))]}")
        }
        router.get("/list/:count") { _, context -> Response in
            let count = try context.parameters.require("count", as: Int.self)
            guard (0...1_000_000).contains(count) else {
                throw HTTPError(.badRequest, message: "count must be 0…1000000, got \(count)")
            }
            var body = "{\"count\":\(count),\"items\":["
            body.reserveCapacity(count * 8 + 32)
            for index in 0..<count {
                if index > 0 { body += "," }
                body += String(index)
            }
            body += "]}"
            return json(body)
        }
        router.get("/me") { request, _ -> Response in
            if let latency = request.uri.queryParameters.get("latency_ms", as: Int.self) {
                try await state.delay(.milliseconds(latency))
            }
            guard state.isValid(bearer(request)) else {
                return json("{\"error\":\"token_expired\"}", status: .unauthorized)
            }
            return json("{\"user\":{\"id\":42,\"name\":\"Ada Lovelace\",\"roles\":[\"admin\",\"dev\"]}}")
        }
        router.get("/users/:id") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int.self)
            return json(
                "{\"id\":\(id),\"name\":\"User \(id)\",\"orders\":[{\"id\":\(id * 100 + 1)},{\"id\":\(id * 100 + 2)}]}")
        }
        router.post("/echo") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let type = request.headers[.contentType] ?? "application/octet-stream"
            return Response(status: .ok, headers: [.contentType: type], body: .init(byteBuffer: body))
        }
        router.get("/stats") { _, _ -> Response in
            let json = state.counters.withLock { counters in
                "{\"inFlight\":\(counters.inFlight),\"peakInFlight\":\(counters.peakInFlight),\"requests\":\(counters.requests),\"refreshCalls\":\(counters.refreshCalls)}"
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: json)))
        }
        addHTTPBinRoutes(to: router, state: state)
        addCharsetRoutes(to: router)
        addEncodingRoutes(to: router)
        addRateLimitRoutes(to: router, state: state)
        addJobRoutes(to: router, state: state)
        addPageRoutes(to: router, state: state)
        addSchemaRoutes(to: router)
        return router
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        return String(header.dropFirst("Bearer ".count))
    }

    static func tokenResponse(_ token: String, state: DemoServerState) -> Response {
        let seconds = state.configuration.tokenLifetime.components.seconds
        let json = "{\"access_token\":\"\(token)\",\"expires_in\":\(seconds)}"
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: json)))
    }

    static func payload(bytes: Int, latency: Duration, state: DemoServerState) async throws -> Response {
        guard bytes >= 0, bytes <= 64 << 20 else {
            throw HTTPError(.badRequest, message: "bytes must be 0…64 MiB, got \(bytes)")
        }
        try await state.delay(latency)
        let buffer = ByteBuffer(repeating: UInt8(ascii: "x"), count: bytes)
        return Response(
            status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: buffer))
    }
}
