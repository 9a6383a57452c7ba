import Foundation
import HTTPTypes
import Hummingbird
import Orchestra

/// Routes with httpbin's names and answers (`/anything`, `/get`, `/status`, `/redirect-to`,
/// `/redirect`, `/bytes`, `/cookies`, `/cookies/set`, `/cookies/delete`, `/basic-auth`),
/// so that a transport conformance suite can run against the demo server or a real httpbin,
/// and `/barrier`, which httpbin has no equivalent of.
extension DemoRoutes {
    /// The methods the any-method routes answer.
    static let anyMethod: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
    /// The largest request body `/anything` reads.
    static let maximumEchoedBody = 4 << 20
    /// The most requests one barrier waits for: 16 times what the conformance suite holds, and
    /// no more connections than the server's accept backlog (256) takes at once.
    static let maximumBarrierCount = 256

    static func addHTTPBinRoutes(to router: Router<BasicRequestContext>, state: DemoServerState) {
        for method in anyMethod {
            router.on("/anything", method: method) { request, _ in try await anything(request) }
            router.on("/anything/**", method: method) { request, _ in try await anything(request) }
            router.on("/status/:code", method: method) { request, context in try status(request, context) }
            router.on("/redirect-to", method: method) { request, _ in try redirect(request) }
        }
        router.get("/get") { request, _ in try await anything(request) }
        router.get("/redirect/:n") { _, context -> Response in
            let n = try context.parameters.require("n", as: Int.self)
            guard (1...100).contains(n) else { throw HTTPError(.badRequest, message: "n must be 1…100, got \(n)") }
            let location = n == 1 ? "/get" : "/redirect/\(n - 1)"
            return Response(
                status: .found, headers: [.location: location],
                body: .init(byteBuffer: ByteBuffer(string: "redirecting to \(location)\n")))
        }
        router.get("/bytes/:count") { _, context -> Response in
            let count = try context.parameters.require("count", as: Int.self)
            guard count >= 0, count <= 64 << 20 else {
                throw HTTPError(.badRequest, message: "count must be 0…64 MiB, got \(count)")
            }
            var buffer = ByteBuffer()
            buffer.reserveCapacity(count)
            for index in 0..<count { buffer.writeInteger(UInt8(truncatingIfNeeded: index &* 31 &+ 7)) }
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: buffer))
        }
        router.get("/cookies") { request, _ in try cookies(received: request) }
        router.get("/cookies/set") { request, _ -> Response in
            // Sets each query parameter as a cookie, then sends the client to /cookies.
            var headers: HTTPFields = [.location: "/cookies"]
            for (name, value) in request.uri.queryParameters {
                headers.append(HTTPField(name: .setCookie, value: "\(name)=\(value); Path=/"))
            }
            return Response(status: .found, headers: headers)
        }
        router.get("/cookies/delete") { request, _ -> Response in
            var headers: HTTPFields = [.location: "/cookies"]
            for (name, _) in request.uri.queryParameters {
                headers.append(
                    HTTPField(
                        name: .setCookie, value: "\(name)=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/"))
            }
            return Response(status: .found, headers: headers)
        }
        router.get("/basic-auth/:user/:password") { request, context -> Response in
            // The path's segments as the client meant them (httpbin decodes `p%20w` to `p w`).
            let user = try context.parameters.require("user").removingPercentEncoding ?? ""
            let password = try context.parameters.require("password").removingPercentEncoding ?? ""
            let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
            guard request.headers[.authorization] == expected else {
                return Response(status: .unauthorized, headers: [.wwwAuthenticate: #"Basic realm="Fake Realm""#])
            }
            let json = try JSONSerialization.data(
                withJSONObject: ["authenticated": true, "user": user], options: [.sortedKeys])
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: json)))
        }
        router.get("/barrier/:name") { request, context -> String in
            let name = try context.parameters.require("name")
            let count = request.uri.queryParameters.get("count", as: Int.self) ?? 2
            guard (1...maximumBarrierCount).contains(count) else {
                throw HTTPError(.badRequest, message: "count must be 1…\(maximumBarrierCount), got \(count)")
            }
            try await state.barrier(path: request.uri.path, count: count)
            return name
        }
    }

    /// httpbin's echo: `method`, `url`, `args`, `headers` (each value's bytes read as ISO
    /// Latin-1, as httpbin does), `data` (the body as UTF-8 text, else as a base64 `data:`
    /// URL), `json`; and, beyond httpbin, `path` (path and query as received), `headersHex`
    /// (each value's bytes in hex), `bodyLength` and `bodyBase64`.
    static func anything(_ request: Request) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: maximumEchoedBody)
        let bytes = Array(body.readableBytesView)
        var headers: [String: String] = [:]
        var headersHex: [String: String] = [:]
        for field in request.headers {
            let value = field.withUnsafeBytesOfValue { Array($0) }
            let name = field.name.rawName
            headers[name] = headers[name].map { $0 + "," } ?? ""
            headers[name]! += String(String.UnicodeScalarView(value.map { Unicode.Scalar($0) }))
            headersHex[name] = headersHex[name].map { $0 + "2c" } ?? ""
            headersHex[name]! += value.map { String(format: "%02x", $0) }.joined()
        }
        var args: [String: Any] = [:]
        for (key, value) in request.uri.queryParameters {
            switch args[String(key)] {
            case nil: args[String(key)] = String(value)
            case let first as String: args[String(key)] = [first, String(value)]
            case let list as [String]: args[String(key)] = list + [String(value)]
            default: break
            }
        }
        let path = request.head.path ?? request.uri.string
        let text = String(validating: bytes, as: UTF8.self)
        let (form, files) = formFields(of: Data(bytes), type: request.headers[.contentType])
        let echo: [String: Any] = [
            "method": request.method.rawValue,
            "url": "http://\(request.head.authority ?? "127.0.0.1")\(path)",
            "path": path,
            "args": args,
            "headers": headers,
            "headersHex": headersHex,
            "data": text ?? "data:application/octet-stream;base64,\(Data(bytes).base64EncodedString())",
            "json": text.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8), options: [.fragmentsAllowed])
            } ?? NSNull(),
            "form": form,
            "files": files,
            "bodyLength": bytes.count,
            "bodyBase64": Data(bytes).base64EncodedString(),
        ]
        let json = try JSONSerialization.data(withJSONObject: echo, options: [.sortedKeys, .withoutEscapingSlashes])
        if request.method == .head { return Response(status: .ok, headers: [.contentType: "application/json"]) }
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// httpbin's `form` and `files` of a request body: the fields of an
    /// `application/x-www-form-urlencoded` or `multipart/form-data` body (a name given twice
    /// becomes a list), and the files of a multipart body by part name (their bytes as UTF-8
    /// text, else a base64 `data:` URL), each with its `filename` and `type` under
    /// `files["NAME.meta"]`. Both empty for other bodies.
    static func formFields(of body: Data, type: String?) -> (form: [String: Any], files: [String: Any]) {
        var form: [String: Any] = [:]
        var files: [String: Any] = [:]
        func add(_ value: Any, as name: String, to fields: inout [String: Any]) {
            switch fields[name] {
            case nil: fields[name] = value
            case let list as [Any]: fields[name] = list + [value]
            case let first?: fields[name] = [first, value]
            }
        }
        let original = type ?? ""
        let type = original.lowercased()
        if type.hasPrefix("application/x-www-form-urlencoded") {
            for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                    $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                add(parts.count > 1 ? parts[1] : "", as: parts[0], to: &form)
            }
        } else if type.hasPrefix("multipart/form-data"),
            let boundary = original.split(separator: ";").lazy.map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { $0.lowercased().hasPrefix("boundary=") })?.dropFirst("boundary=".count)
        {
            let delimiter = Data("--\(boundary.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))".utf8)
            var start = body.startIndex
            var parts: [Data] = []
            while let found = body.range(of: delimiter, in: start..<body.endIndex) {
                if start != body.startIndex { parts.append(body[start..<found.lowerBound]) }
                start = found.upperBound
            }
            let separator = Data("\r\n\r\n".utf8)
            for part in parts {
                // Each part: CRLF, headers, a blank line, the content, CRLF before the next delimiter.
                guard let blank = part.range(of: separator) else { continue }
                let head = String(decoding: part[part.startIndex..<blank.lowerBound], as: UTF8.self)
                var content = part[blank.upperBound...]
                if content.suffix(2) == Data("\r\n".utf8) { content = content.dropLast(2) }
                var name: String?
                var filename: String?
                var partType: String?
                for line in head.split(separator: "\r\n") {
                    let lower = line.lowercased()
                    if lower.hasPrefix("content-disposition:") {
                        name = quotedParameter("name", in: String(line))
                        filename = quotedParameter("filename", in: String(line))
                    } else if lower.hasPrefix("content-type:") {
                        partType = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                    }
                }
                guard let name else { continue }
                let text =
                    String(validating: content, as: UTF8.self)
                    ?? "data:application/octet-stream;base64,\(Data(content).base64EncodedString())"
                if let filename {
                    add(text, as: name, to: &files)
                    files["\(name).meta"] = [
                        "filename": filename, "type": partType.map { $0 as Any } ?? NSNull(), "bytes": content.count,
                    ]
                } else {
                    add(text, as: name, to: &form)
                }
            }
        }
        return (form, files)
    }

    /// The value of `name="…"` in a header line.
    private static func quotedParameter(_ name: String, in line: String) -> String? {
        for parameter in line.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard parameter.hasPrefix("\(name)=\"") else { continue }
            return String(parameter.dropFirst(name.count + 2).dropLast())
        }
        return nil
    }

    /// `/cookies`: `{"cookies": {NAME: VALUE, …}}`, the cookies the request sent.
    static func cookies(received request: Request) throws -> Response {
        var cookies: [String: String] = [:]
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                guard !name.isEmpty else { continue }
                cookies[name] = parts.count > 1 ? String(parts[1]) : ""
            }
        }
        let json = try JSONSerialization.data(withJSONObject: ["cookies": cookies], options: [.sortedKeys])
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// `/status/{code}`: that status with an empty body; a 401 carries the `WWW-Authenticate`
    /// challenge named by `challenge` (`Basic`, the default, `Digest` or `Bearer`).
    static func status(_ request: Request, _ context: BasicRequestContext) throws -> Response {
        let code = try context.parameters.require("code", as: Int.self)
        guard (200...599).contains(code) else {
            throw HTTPError(.badRequest, message: "code must be 200…599, got \(code)")
        }
        var headers: HTTPFields = [:]
        if code == 401 {
            let challenge = request.uri.queryParameters.get("challenge") ?? "Basic"
            headers[.wwwAuthenticate] =
                switch challenge {
                case "Basic": #"Basic realm="Fake Realm""#
                case "Digest": #"Digest realm="orchestra", qop="auth", nonce="6f726368657374726100", opaque="0000""#
                case "Bearer": #"Bearer realm="orchestra", error="invalid_token""#
                default:
                    throw HTTPError(.badRequest, message: "challenge must be Basic, Digest or Bearer, got \(challenge)")
                }
        }
        return Response(status: .init(code: code), headers: headers)
    }

    /// `/redirect-to?url=…&status_code=30x`: that status (302 unless 300…399) with `Location:
    /// url` and a short text body.
    static func redirect(_ request: Request) throws -> Response {
        guard let url = request.uri.queryParameters.get("url"), !url.isEmpty else {
            throw HTTPError(.badRequest, message: "url is required")
        }
        var code = request.uri.queryParameters.get("status_code", as: Int.self) ?? 302
        if !(300...399).contains(code) { code = 302 }
        let body = ByteBuffer(string: "redirecting to \(url)\n")
        return Response(
            status: .init(code: code), headers: [.location: url, .contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: body)
        )
    }
}
