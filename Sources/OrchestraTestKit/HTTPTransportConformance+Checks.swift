import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

/// The checks themselves: each sends through the transport and compares what came back with
/// what the contract requires.
extension HTTPTransportConformance {
    func checkStatuses() async throws {
        for (method, code) in [(HTTPRequest.Method.get, 404), (.get, 500), (.post, 500), (.delete, 404), (.get, 418)] {
            let (response, _) = try await send(
                .statusesAreReturned, request(method, "/status/\(code)"),
                expected: "\(method) /status/\(code) to return \(code)")
            try require(
                .statusesAreReturned, response.status.code == code,
                expected: "\(method) /status/\(code) to return \(code)", actual: "\(response.status.code)")
        }
    }

    func checkChallenges() async throws {
        for challenge in ["Basic", "Digest", "Bearer"] {
            let expected = "a 401 with a \(challenge) challenge returned at once"
            let (response, _) = try await send(
                .challengesReturnAtOnce, request(.get, "/status/401?challenge=\(challenge)"), expected: expected)
            try require(
                .challengesReturnAtOnce, response.status.code == 401, expected: expected,
                actual: "\(response.status.code)")
            try require(
                .challengesReturnAtOnce, response.headerFields[.wwwAuthenticate] != nil,
                expected: expected + ", with its WWW-Authenticate", actual: "no WWW-Authenticate")
        }
    }

    func checkRedirects() async throws {
        for (method, code) in [
            (HTTPRequest.Method.get, 301), (.get, 302), (.get, 303), (.post, 303), (.get, 307), (.post, 307),
            (.put, 308),
        ] {
            let target = "/anything/followed-\(code)"
            let expected = "\(method) to a \(code) returned as is, with Location \(target)"
            let body = method == .get ? nil : Data("redirected body".utf8)
            let (response, data) = try await send(
                .redirectsAreReturned,
                request(
                    method, "/redirect-to?url=\(target)&status_code=\(code)",
                    contentType: body.map { _ in "text/plain" }),
                body: body, expected: expected
            )
            try require(
                .redirectsAreReturned, response.status.code == code, expected: expected,
                actual: "\(response.status.code)\(response.status.code == 200 ? " (followed)" : "")")
            try require(
                .redirectsAreReturned, response.headerFields[.location] == target, expected: expected,
                actual: "Location \(response.headerFields[.location] ?? "missing")")
            if let length = response.headerFields[.contentLength].flatMap({ Int($0) }) {
                try require(
                    .redirectsAreReturned, data.count == length, expected: "its body of \(length) bytes",
                    actual: "\(data.count) bytes")
            }
        }
    }

    func checkBodies() async throws {
        let sent = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 256) })
        for method in [HTTPRequest.Method.post, .put, .patch] {
            let echo = try await echo(
                .bodiesArriveByteForByte, request(method, "/anything", contentType: "application/octet-stream"),
                body: sent)
            try require(
                .bodiesArriveByteForByte, echo.method == method.rawValue, expected: "method \(method)",
                actual: "method \(echo.method ?? "none")")
            try compare(.bodiesArriveByteForByte, echo.body, with: sent, what: "the \(method) body")
        }
    }

    func checkGetWithBody() async throws {
        let sent = Data("a GET body, é\u{0}\u{1}".utf8)
        do {
            let echo = try await echo(
                .getWithBody, request(.get, "/anything", contentType: "application/octet-stream"), body: sent)
            try compare(.getWithBody, echo.body, with: sent, what: "the GET body")
        } catch let error as HTTPTransportError {
            try require(
                .getWithBody, error.code == .bodyNotAllowed, expected: Check.getWithBody.expectation,
                actual: "HTTPTransportError(\(error.code)): \(error)")
        }
    }

    func checkCancellation() async throws {
        let path = "/barrier/cancel-\(UUID().uuidString)"
        let transport = self.transport
        // Waits for 256 arrivals (the demo server's largest barrier): only two ever come.
        let held = request(.get, "\(path)?count=256")
        let outcome = try await withThrowingTaskGroup(of: Result<Int, any Error>.self) { group in
            group.addTask {
                do { return .success(try await transport.send(held, body: nil).0.status.code) } catch {
                    return .failure(error)
                }
            }
            // Returns once the held request has arrived too: the barrier counts arrivals.
            let (response, _) = try await send(
                .cancellationThrowsCancellationError, request(.get, "\(path)?count=2"),
                expected: "the held request to arrive")
            try require(
                .cancellationThrowsCancellationError, response.status.code == 200,
                expected: "/barrier to answer 200 (the demo server's route)", actual: "\(response.status.code)")
            group.cancelAll()
            return try await group.next()!
        }
        switch outcome {
        case .failure(is CancellationError): return
        case .failure(let error):
            throw failure(.cancellationThrowsCancellationError, actual: "\(type(of: error)): \(error)")
        case .success(let status): throw failure(.cancellationThrowsCancellationError, actual: "a \(status) response")
        }
    }

    func checkProgress() async throws {
        let size = 102_400
        let reports = Locked<[(Int, Int?)]>([])
        let (response, data) = try await catching(.progressIsReported) {
            try await transport.send(request(.get, "/bytes/\(size)"), body: nil) { received, expected in
                reports.withLock { $0.append((received, expected)) }
            }
        }
        let seen = reports.withLock { $0 }
        try require(
            .progressIsReported, response.status.code == 200 && data.count == size,
            expected: "/bytes/\(size) to return \(size) bytes", actual: "\(response.status.code), \(data.count) bytes")
        try require(
            .progressIsReported, !seen.isEmpty, expected: Check.progressIsReported.expectation,
            actual: "no progress report")
        try require(
            .progressIsReported, zip(seen, seen.dropFirst()).allSatisfy { $0.0 <= $1.0 },
            expected: "received counts that never go back", actual: "\(seen.map(\.0))")
        try require(
            .progressIsReported, seen.last?.0 == size, expected: "the last report at \(size) bytes",
            actual: "\(seen.last?.0 ?? 0)")
        try require(
            .progressIsReported, seen.allSatisfy { $0.1 == nil || $0.1 == size },
            expected: "expected sizes of \(size) or nil",
            actual: "\(Set(seen.map { $0.1.map(String.init) ?? "nil" }).sorted())")

        let empty = Locked<[Int]>([])
        _ = try await catching(.progressIsReported) {
            try await transport.send(request(.get, "/bytes/0"), body: nil) { received, _ in
                empty.withLock { $0.append(received) }
            }
        }
        try require(
            .progressIsReported, empty.withLock { $0.last } == 0, expected: "an empty body reported as 0 bytes",
            actual: "\(empty.withLock { $0 })")
    }

    func checkManyInFlight() async throws {
        let count = min(requestsInFlight, transport.maximumConnectionsPerHost)
        try require(
            .manyRequestsInFlightToOneHost, count >= 1, expected: "maximumConnectionsPerHost ≥ 1",
            actual: "\(transport.maximumConnectionsPerHost)")
        let barrier = request(.get, "/barrier/in-flight-\(UUID().uuidString)?count=\(count)")
        let conformance = self
        // Each request is answered only once all `count` have arrived: a transport that holds
        // some back never completes, and the check's timeout says so.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await conformance.send(
                        .manyRequestsInFlightToOneHost, barrier, expected: "\(count) requests in flight at once"
                    ).0.status.code
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        try require(
            .manyRequestsInFlightToOneHost, statuses.allSatisfy { $0 == 200 },
            expected: "\(count) answers 200 from /barrier (the demo server's route)", actual: "\(statuses.sorted())")
    }

    func checkNonASCIIHeaders() async throws {
        let name = HTTPField.Name("X-Orchestra-Text")!
        let value = "café ☕ 日本語"
        var echoRequest = request(.get, "/anything")
        echoRequest.headerFields[name] = value
        let expected = Array(value.utf8)
        do {
            let echo = try await echo(.nonASCIIHeaderValues, echoRequest, body: nil)
            guard let received = echo.headerBytes(named: name.rawName) else {
                throw failure(.nonASCIIHeaderValues, actual: "no \(name) header at the server")
            }
            try require(
                .nonASCIIHeaderValues, received == expected, expected: "the bytes \(hex(expected))",
                actual: "the bytes \(hex(received))")
        } catch let error as HTTPTransportError {
            let names = error.message.localizedCaseInsensitiveContains(name.rawName)
            try require(
                .nonASCIIHeaderValues, names, expected: "an HTTPTransportError naming \(name)",
                actual: "\"\(error.message)\"")
        }
    }

    func checkConnectionRefused() async throws {
        var refused = HTTPRequest(method: .get, scheme: refusingServer.scheme, authority: nil, path: "/")
        refused.authority =
            refusingServer.port.map { "\(refusingServer.host ?? "127.0.0.1"):\($0)" } ?? refusingServer.host
        do {
            let (response, _) = try await transport.send(refused, body: nil)
            throw failure(
                .connectionRefusedIsTransient, actual: "a \(response.status.code) response from \(refusingServer)")
        } catch let error as HTTPTransportError {
            try require(
                .connectionRefusedIsTransient, error.code == .connectionRefused && error.isTransient,
                expected: Check.connectionRefusedIsTransient.expectation,
                actual: "code \(error.code), isTransient \(error.isTransient): \(error)")
        } catch let error as HTTPTransportConformanceFailure {
            throw error
        } catch {
            throw failure(.connectionRefusedIsTransient, actual: "\(type(of: error)): \(error)")
        }
    }

    func checkTimedSend() async throws {
        let check = Check.timedSendThrowsTimeoutError
        let transport = self.transport
        let (answered, _) = try await catching(check, expected: "GET /status/200 to return 200 within 60 s") {
            try await transport.send(request(.get, "/status/200"), content: nil, progress: nil, timeout: .seconds(60))
        }
        try require(
            check, answered.status.code == 200, expected: "GET /status/200 to return 200 within 60 s",
            actual: "\(answered.status.code)")
        // Waits for 256 arrivals (the demo server's largest barrier): only this one comes.
        let held = request(.get, "/barrier/timeout-\(UUID().uuidString)?count=256")
        let timeout = Duration.milliseconds(200)
        do {
            let (response, _) = try await transport.send(held, content: nil, progress: nil, timeout: timeout)
            throw failure(check, actual: "a \(response.status.code) response")
        } catch let error as TimeoutError {
            try require(
                check, error.timeout == timeout, expected: check.expectation,
                actual: "TimeoutError with timeout \(error.timeout.map { "\($0)" } ?? "nil")")
        } catch let error as CancellationError where Task.isCancelled {
            throw error
        } catch let error as HTTPTransportConformanceFailure {
            throw error
        } catch {
            throw failure(check, actual: "\(type(of: error)): \(error)")
        }
    }
}
