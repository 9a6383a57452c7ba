import Foundation
import HTTPTypes
import Hummingbird
import Orchestra

/// A server-side rate limit for the demo and the tests (issue 36): `/limited/{bucket}` allows
/// `limit` requests per `window` seconds (a fixed window, as most APIs count), answers 429 with
/// `Retry-After` beyond that, announces its quota in header fields if asked, and records when
/// each request came, so that `/limited/{bucket}/stats` can say how many any one second held.
extension DemoRoutes {
    /// The most arrivals kept per bucket (later ones are counted, not timed) and the most
    /// buckets.
    static let maximumArrivals = 200_000
    static let maximumBuckets = 1_000

    static func addRateLimitRoutes(to router: Router<BasicRequestContext>, state: DemoServerState) {
        router.get("/limited/:bucket/stats") { _, context -> Response in
            let bucket = try context.parameters.require("bucket")
            let stats = state.rateBuckets.withLock { $0.buckets[bucket] }?.stats ?? DemoRateBucket().stats
            let body = try JSONSerialization.data(withJSONObject: stats, options: [.sortedKeys])
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("/limited/:bucket") { request, context -> Response in
            let bucket = try context.parameters.require("bucket")
            let query = request.uri.queryParameters
            let limit = query.get("limit", as: Int.self) ?? 10
            let window = query.get("window", as: Int.self) ?? 1
            let announce = query.get("announce").map { String($0) } ?? "none"
            guard (1...1_000_000).contains(limit), (1...3_600).contains(window) else {
                throw HTTPError(.badRequest, message: "limit must be 1…1000000 and window 1…3600 seconds")
            }
            guard ["none", "ietf", "x", "retry-after-only"].contains(announce) else {
                throw HTTPError(.badRequest, message: "announce must be none, ietf, x or retry-after-only")
            }
            let now = Date().timeIntervalSince1970
            let verdict = state.rateBuckets.withLock { buckets -> DemoRateBucket.Verdict? in
                if buckets.buckets[bucket] == nil, buckets.buckets.count >= maximumBuckets { return nil }
                return buckets.buckets[bucket, default: DemoRateBucket()].arrive(
                    at: now, limit: limit, window: Double(window))
            }
            guard let verdict else { throw HTTPError(.serviceUnavailable, message: "too many buckets") }
            var headers: HTTPFields = [.contentType: "application/json"]
            let reset = max(1, Int(verdict.reset.rounded(.up)))
            switch announce {
            case "ietf":
                headers[HTTPField.Name("RateLimit-Policy")!] = "\"default\";q=\(limit);w=\(window)"
                headers[HTTPField.Name("RateLimit")!] = "\"default\";r=\(verdict.remaining);t=\(reset)"
            case "x":
                headers[HTTPField.Name("X-RateLimit-Limit")!] = "\(limit)"
                headers[HTTPField.Name("X-RateLimit-Remaining")!] = "\(verdict.remaining)"
                headers[HTTPField.Name("X-RateLimit-Reset")!] = "\(Int((now + verdict.reset).rounded(.up)))"
            default: break
            }
            guard verdict.accepted else {
                headers[.retryAfter] = "\(reset)"
                return Response(
                    status: .tooManyRequests, headers: headers,
                    body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\"rate limited\"}")))
            }
            return Response(
                status: .ok, headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: "{\"bucket\":\"\(bucket)\",\"n\":\(verdict.number)}")))
        }
    }
}

/// The rate-limited buckets of one demo server.
struct DemoRateBuckets: Sendable {
    var buckets: [String: DemoRateBucket] = [:]
}

/// One bucket of `/limited`: a fixed window's count, and every arrival's time.
struct DemoRateBucket: Sendable {
    struct Verdict {
        var accepted: Bool
        var remaining: Int
        /// Seconds until the window resets.
        var reset: Double
        /// The arrival's number in the bucket, from 1.
        var number: Int
    }

    private var windowStart = 0.0
    private var inWindow = 0
    private(set) var arrivals: [Double] = []
    private var total = 0
    private var accepted = 0
    private var rejected = 0

    mutating func arrive(at now: Double, limit: Int, window: Double) -> Verdict {
        total += 1
        if arrivals.count < DemoRoutes.maximumArrivals { arrivals.append(now) }
        if now >= windowStart + window {
            windowStart = (now / window).rounded(.down) * window
            inWindow = 0
        }
        let reset = windowStart + window - now
        guard inWindow < limit else {
            rejected += 1
            return Verdict(accepted: false, remaining: 0, reset: reset, number: total)
        }
        inWindow += 1
        accepted += 1
        return Verdict(accepted: true, remaining: limit - inWindow, reset: reset, number: total)
    }

    /// `total`, `accepted`, `rejected` (429s), `max_in_any_second` (the most arrivals in any
    /// window of one second, sliding), `first` and `last` (Unix times, seconds) and `span`.
    var stats: [String: Any] {
        var most = 0
        var start = 0
        for end in arrivals.indices {
            while arrivals[end] - arrivals[start] >= 1 { start += 1 }
            most = max(most, end - start + 1)
        }
        return [
            "total": total, "accepted": accepted, "rejected": rejected, "max_in_any_second": most,
            "first": arrivals.first ?? 0, "last": arrivals.last ?? 0,
            "span": (arrivals.last ?? 0) - (arrivals.first ?? 0),
        ]
    }
}
