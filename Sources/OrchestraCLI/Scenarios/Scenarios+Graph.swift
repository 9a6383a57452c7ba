import Orchestra

// The seeds' API managers that depend on each other ("op1 after op and op3, op2 independent,
// at most 5 at once", NSOperation addDependency), as a TaskGraph: typed results flow along the
// edges, the longest path starts first, and a failed branch skips only its dependents.

extension Scenario {
    static let graph = Scenario(
        name: "graph",
        title: "API managers that depend on each other: a TaskGraph, one branch fails",
        summary: "dependency graph; a failed branch skips only its dependents",
        replaces: "NSOperation subclasses + addDependency between API managers (op1 after op and op3)",
        orchestra: """
            let token = graph.add("login") { try await api.login() }
            let feed  = graph.add("feed", after: token, cost: 9) { token in try await api.feed(token) }
            let page  = graph.add("page", after: profile, feed) { profile, feed in … }
            let result = try await graph.run(limit: 5)
            """,
        limit: 5,
        lanes: ["login", "profile", "avatar", "feed", "ads", "ad-stats", "page", "report"].map(LaneSpec.download)
    ) { stage in
        @Sendable func step<Value: Sendable>(_ name: String, _ milliseconds: Int, _ value: Value) async throws -> Value {
            try await stage.perform(stage.lane(named: name)) {
                try await stage.pause(milliseconds)
                return value
            }
        }
        struct AdServerDown: Error, CustomStringConvertible { var description: String { "HTTP 503 from the ad server" } }

        let graph = TaskGraph()
        let token = graph.add("login") { try await step("login", 300, "token-42") }
        let profile = graph.add("profile", after: token, cost: 3) { _ in try await step("profile", 350, "Ada") }
        let avatar = graph.add("avatar", after: profile, cost: 4) { _ in try await step("avatar", 400, "ada.png") }
        let feed = graph.add("feed", after: token, cost: 9) { _ in try await step("feed", 900, 24) }
        let ads = graph.add("ads") { () async throws -> Int in
            try await stage.perform(stage.lane(named: "ads")) {
                try await stage.pause(250)
                throw AdServerDown()
            }
        }
        let adStats = graph.add("ad-stats", after: ads) { count in try await step("ad-stats", 200, count) }
        let page = graph.add("page", after: profile, avatar, feed) { name, picture, posts in
            try await step("page", 150, "\(name) (\(picture)): \(posts) posts")
        }
        graph.add("report", afterOutcomesOf: page, adStats) { page, stats in
            try await step("report", 100, "page \(page.state), ad-stats \(stats.state)")
        }

        let result = try await graph.run(limit: 5)
        stage.note("page → \(try result.value(of: page))", tone: .good)
        stage.note("ads failed; ad-stats \(result[adStats].state); the rest went on", tone: .attention)
        let order = result.nodeIDs
            .compactMap { id in result.outcome(id: id)?.started.map { (id, $0) } }
            .sorted { $0.1 < $1.1 }
            .map(\.0)
        stage.note("start order: \(order.joined(separator: " → ")) (feed, the longest path after login, before profile)")
    }
}
