import Orchestra

// Retrying a flaky download with backoff, instead of re-issuing the request from its failure
// block with a hand-kept counter.

/// The simulated server is briefly overloaded.
struct ServiceUnavailable: Error, CustomStringConvertible {
    var description: String { "HTTP 503" }
}

extension Scenario {
    static let retry = Scenario(
        name: "retry",
        title: "Flaky downloads: img-3 succeeds on its 3rd attempt, img-6 on its 2nd",
        summary: "flaky downloads retried with backoff",
        replaces: "re-issuing the request from its failure block, with a retry counter and dispatch_after",
        orchestra: "let image = try await withRetry(policy, onRetry: { log($0) }) { try await download(url) }",
        limit: 8
    ) { stage in
        // Exponential backoff from 150 ms (scaled) with half jitter; seeded, so runs repeat.
        let policy = RetryPolicy(
            maxAttempts: 4,
            initialDelay: stage.scaled(150),
            multiplier: 2,
            jitter: 0.5,
            randomSource: .seeded(3),
            isRetryable: { $0 is ServiceUnavailable }
        )
        let failuresBeforeSuccess = [3: 2, 6: 1]
        let retries = Locked(0)

        _ = try await SimulatedImage.all.concurrentMap(limit: 8) { image in
            let lane = stage.lane(image)
            var attempt = 0
            do {
                try await withRetry(policy, onRetry: { event in
                    stage.note("\(image.name) attempt \(event.attempt) failed (\(event.error)) → retry in \(Format.milliseconds(event.delay))", tone: .attention)
                    lane.waiting()
                    retries.withLock { $0 += 1 }
                }) {
                    attempt += 1
                    let failing = attempt <= failuresBeforeSuccess[image.number, default: 0]
                    try await lane.run {
                        if failing {
                            try await stage.pause(image.latency / 2)
                            throw ServiceUnavailable()
                        }
                        try await stage.pause(image.latency)
                    }
                }
                lane.finish(attempt == 1 ? .ok : .ok("on attempt \(attempt)"))
            } catch {
                lane.finish(.failed(error))
                throw error
            }
        }
        let retried = retries.withLock { $0 }
        stage.note("all 8 done: \(Format.count(retried, "retry", plural: "retries")) absorbed, the caller saw no error", tone: .good)
    }
}
