import Orchestra

// Capping how many downloads run at once: a fixed cap like dispatch_semaphore(2), and a cap
// that changes while the batch runs.

extension Scenario {
    static let limitTwo = Scenario(
        name: "limit-2",
        title: "8 requests issued, at most 2 downloading at once, no thread blocked",
        summary: "at most 2 at once, no thread blocked",
        replaces: "dispatch_semaphore_create(2) + dispatch_semaphore_wait / _signal around each request",
        orchestra: "try await semaphore.withPermit { try await download(url) }   // AsyncSemaphore(value: 2)",
        limit: 2
    ) { stage in
        let semaphore = AsyncSemaphore(value: 2)

        @Sendable func census() async throws {
            try await stage.pause(100)
            stage.note("\(Format.count(semaphore.waitingCount, "request")) suspended at the semaphore; no thread is blocked while they wait")
        }
        async let counted: Void = census()

        let downloads = try await SimulatedImage.all.concurrentMap(limit: 8) { image in
            stage.lane(image).waiting()
            return try await semaphore.withPermit {
                try await stage.download(image)
            }
        }
        try await counted
        stage.note("all \(downloads.count) done; never more than 2 at once", tone: .good)
    }

    static let raiseLimit = Scenario(
        name: "raise-limit",
        title: "Start with 2 downloads at once, raise the limit to 6 mid-run",
        summary: "at most 2 at once, raised to 6 mid-run",
        replaces: "NSOperationQueue.maxConcurrentOperationCount / a semaphore that cannot be resized",
        orchestra: "limiter.limit = 6   // ConcurrencyLimiter(limit: 2), waiting work starts at once",
        limit: 6
    ) { stage in
        let limiter = ConcurrencyLimiter(limit: 2)

        @Sendable func switchToWiFi() async throws {
            try await stage.pause(700)
            let waiting = limiter.waitingCount
            limiter.limit = 6
            stage.note("switched to Wi-Fi: limit 2 → 6; \(Format.count(waiting, "waiting download")) admitted at once", tone: .attention)
        }
        async let raised: Void = switchToWiFi()

        let downloads = try await SimulatedImage.all.concurrentMap(limit: 8) { image in
            stage.lane(image).waiting()
            return try await limiter.withPermit {
                try await stage.download(image)
            }
        }
        try await raised
        stage.note("all \(downloads.count) done; running work was never interrupted", tone: .good)
    }
}
