import Orchestra

// Capping how many downloads run at once, like dispatch_semaphore(2), without blocking a thread.

extension Scenario {
    static let limitTwo = Scenario(
        name: "limit-2",
        title: "8 requests issued, at most 2 downloading at once, no thread blocked",
        summary: "at most 2 at once, no thread blocked",
        replaces: "dispatch_semaphore_create(2) + dispatch_semaphore_wait / _signal around each request",
        orchestra: "try await semaphore.withPermit { try await download(url) }   // AsyncSemaphore(value: 2)",
        limit: 2,
        usesImages: true,
        lanes: Scenario.imageLanes
    ) { stage in
        let semaphore = AsyncSemaphore(value: 2)
        let suspended = Locked(0)
        let downloads = try await stage.images.concurrentMap(limit: stage.images.count) { image in
            stage.lane(image).waiting()
            let waiting = semaphore.waitingCount
            suspended.withLock { $0 = max($0, waiting) }
            return try await semaphore.withPermit {
                try await stage.download(image)
            }
        }
        let most = suspended.withLock { $0 }
        stage.note(
            "up to \(Format.count(most, "request")) suspended at the semaphore at once; no thread was blocked while they waited"
        )
        stage.note("all \(downloads.count) done; never more than 2 at once", tone: .good)
    }
}
