import Orchestra

// The seeds' TokenRefresher: when the access token expires, every request waits while one
// refresh runs, then goes on with the new token.

/// The simulated server's answer to a request made with an expired token.
struct Unauthorized: Error, CustomStringConvertible {
    let token: Int
    var description: String { "401 Unauthorized (token v\(token) expired)" }
}

extension Scenario {
    static let tokenRefresh = Scenario(
        name: "token-refresh",
        title: "The token expires mid-batch: requests pause while one shared refresh runs",
        summary: "requests wait while one token refresh runs",
        replaces: "TokenRefresher singleton holding dispatch_semaphore_wait(continueMutex); every request depends on it",
        orchestra: """
            try await auth.pass()                         // AsyncGate: closed while refreshing
            try await refreshes.run(key: staleToken) { … } // SingleFlight: one refresh for many 401s
            """,
        limit: 8,
        lanes: Scenario.imageLanes + [.helper("refresh")]
    ) { stage in
        let auth = AsyncGate()
        let refreshes = SingleFlight<Int, Int>()
        let token = Locked(1)              // the client's current access token (a version number)
        let counts = Locked((unauthorized: 0, refreshes: 0))
        let expiry = stage.scaled(350)     // token v1 stops working 350 ms in

        /// The server checks the token first: a stale one gets a 401 after one round trip.
        @Sendable func get(_ image: SimulatedImage, token: Int) async throws {
            if token == 1, stage.now >= expiry {
                try await stage.pause(250)
                throw Unauthorized(token: token)
            }
            try await stage.pause(image.latency)
        }

        /// Replaces `stale`, once, however many requests ask; later askers find it done.
        @Sendable func refresh(replacing stale: Int) async throws {
            guard token.withLock({ $0 }) == stale else { return }
            _ = try await refreshes.run(key: stale) {
                auth.close()
                defer { auth.open() }
                stage.note("refreshing token v\(stale): gate closed, new requests wait at it", tone: .attention)
                try await stage.perform(stage.lane(named: "refresh")) { try await stage.pause(600) }
                token.withLock { $0 = stale + 1 }
                counts.withLock { $0.refreshes += 1 }
                let atGate = auth.waitingCount
                stage.note("token v\(stale + 1) ready: gate opens for \(Format.count(atGate, "request")) waiting at it; the 401s retry", tone: .attention)
                return stale + 1
            }
        }

        _ = try await SimulatedImage.all.concurrentMap(limit: 8) { image in
            try await stage.pause(100 * (image.number - 1))   // requests come in as the user scrolls
            let lane = stage.lane(image)
            while true {
                lane.waiting()
                try await auth.pass()
                let current = token.withLock { $0 }
                do {
                    try await lane.run { try await get(image, token: current) }
                    lane.finish(current == 1 ? .ok : .ok("token v\(current)"))
                    return
                } catch let error as Unauthorized {
                    counts.withLock { $0.unauthorized += 1 }
                    stage.note("\(image.name) ← \(error) → waits for the refresh")
                    lane.waiting()
                    try await refresh(replacing: current)
                }
            }
        }
        let (unauthorized, refreshCount) = counts.withLock { ($0.unauthorized, $0.refreshes) }
        stage.note("\(unauthorized) × 401 → \(Format.count(refreshCount, "refresh", plural: "refreshes")), shared through SingleFlight; every request got its image", tone: .good)
    }
}
