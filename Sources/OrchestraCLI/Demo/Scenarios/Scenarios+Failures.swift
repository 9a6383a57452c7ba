import Dispatch
import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

// What hand-rolled coordination does when something goes wrong — waits forever: a
// dispatch_group whose leave never comes, a semaphore never signalled, an NSOperation that never
// sets isFinished. With Orchestra every job ends, and says why.

extension Scenario {
    static let failures = Scenario(
        name: "failures",
        title: "When things go wrong: every job ends, and says why",
        summary: "flaky server, no answer, a lost callback, a refused port",
        replaces:
            "a dispatch_group_leave that never comes; an NSTimer for timeouts; a retry counter in the failure block",
        orchestra: """
            try await withRetry(policy) { … }  ·  try await withTimeout(.milliseconds(800)) { … }
            try await withCallback { completion in legacy.fetch(url) { completion.resume(returning: $0) } }
            """,
        limit: 4,
        lanes: { _ in ["flaky", "no answer", "lost callback", "refused"].map(LaneSpec.download) },
        body: { stage in
            let retrying = HTTPCoordinator(
                transport: stage.transport,
                configuration: .init(
                    requestTimeout: .seconds(30), retry: RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(100)))
            )
            let flakyPath = "flaky/demo-\(UInt32.random(in: 0 ... .max))"
            let legacy = LegacyImageAPI()

            let jobs: [(String, @Sendable () async throws -> String)] = [
                (
                    "flaky",
                    {
                        let result = try await stage.get(
                            stage.url(flakyPath).appending(queryItems: [URLQueryItem(name: "failures", value: "1")]),
                            through: retrying)
                        return "200 on attempt \(result.attempts), after the server's 503 + Retry-After: 1"
                    }
                ),
                (
                    "no answer",
                    {
                        try await withTimeout(.milliseconds(stage.scaled(800))) {
                            _ = try await stage.get(stage.url("hang"))
                        }
                        return "answered"
                    }
                ),
                (
                    "lost callback",
                    {
                        let bytes: Int = try await withCallback { completion in
                            legacy.fetch(stage.url("images/0", latency: 120)) { result in
                                switch result {
                                case .success(let bytes): completion.resume(returning: bytes)
                                case .failure(let error): completion.resume(throwing: error)
                                }
                            }
                        }
                        return "\(bytes) bytes"
                    }
                ),
                (
                    "refused",
                    {
                        _ = try await stage.get(URL(string: "http://127.0.0.1:1/")!)
                        return "connected"
                    }
                ),
            ]
            let outcomes = await jobs.concurrentResults(limit: 4) { name, job in
                try await stage.perform(stage.lane(named: name)) { try await job() }
            }
            for ((name, _), outcome) in zip(jobs, outcomes) {
                switch outcome {
                case .success(let detail): stage.note("\(name): \(detail)", tone: .good)
                case .failure(let error): stage.note("\(name): \(Format.error(error))", tone: .bad)
                }
            }
            let errors = outcomes.map { outcome -> (any Error)? in
                if case .failure(let error) = outcome { return error }
                return nil
            }
            stage.fact(
                "jobs that ended (none hangs)", "\(outcomes.count)/\(jobs.count)", holds: outcomes.count == jobs.count)
            stage.fact(
                "flaky: retried, honouring Retry-After", errors[0] == nil ? "succeeded" : Format.error(errors[0]!),
                holds: errors[0] == nil)
            stage.fact(
                "no answer: TimeoutError", errors[1].map(Format.error) ?? "answered", holds: errors[1] is TimeoutError)
            stage.fact(
                "lost callback: CallbackError.abandoned", errors[2].map(Format.error) ?? "called back",
                holds: (errors[2] as? CallbackError)?.code == .abandoned)
            stage.fact(
                "refused: the transport's error", errors[3].map(Format.error) ?? "connected", holds: errors[3] != nil)
        })
}

/// A completion-block API in the style of a networking wrapper, with the classic
/// bug: on a "cache hit" it returns early and never calls `completed` — the
/// `dispatch_group_leave` that never comes. The block is released when the work ends.
struct LegacyImageAPI: Sendable {
    /// Paths it believes it has cached.
    var cachedPaths: Set<String> = ["/images/0"]

    func fetch(_ url: URL, completed: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        DispatchQueue.global().async {
            if cachedPaths.contains(url.path) { return }  // Bug: `completed` is never called on this path.
            completed(.failure(URLError(.unsupportedURL)))  // (the network path is not needed here)
        }
    }
}
