import Foundation
import Orchestra

extension DurableHTTPTransport {
    /// How the requests sent in a task are named as jobs, and whether they may run twice: set
    /// with ``DurableHTTPTransport/withJobName(_:atMostOnce:isolation:_:)`` or
    /// ``DurableHTTPTransport/withFreshJobs(isolation:_:)``.
    public struct JobNaming: Sendable {
        enum Kind: Sendable {
            /// `name#1`, `name#2`… for the requests sent in the scope, in order.
            case named(String, sends: Locked<Int>)
            /// A job of its own each time, never found by a later producer.
            case fresh
        }

        let kind: Kind
        let atMostOnce: Bool
    }

    /// The naming of the requests the current task sends; `nil` names a request by its content.
    @TaskLocal static var naming: JobNaming?

    /// Sends the requests of `body` as jobs named after `name`, so that a producer started
    /// again on the same run finds them by what they are rather than by their bytes.
    ///
    /// The requests sent in the scope are the jobs `name#1`, `name#2`… (after the transport's
    /// `jobPrefix`), in the order they are sent: a request, then its retries, its redirects and
    /// its re-sends after a token refresh, which a coordinator sends one after another. A
    /// producer started again that sends the same steps in the same order reads back the
    /// outcomes stored, even if the request's bytes differ (a multipart boundary, a timestamp).
    /// Requests sent concurrently in one scope get distinct numbers in no set order: give each
    /// its own name.
    ///
    /// ```swift
    /// let result = try await DurableHTTPTransport.withJobName("charge-\(order.id)", atMostOnce: true) {
    ///     try await api.data(for: post, body: payment)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: Unique in the run, the same for the same request in every producer.
    ///   - atMostOnce: Whether the job must not be sent twice (`DurableJobOptions.atMostOnce`):
    ///     a worker that dies or gives it back after it started sending ends it uncertain, and
    ///     the transport throws ``HTTPJobUncertainError`` instead of a response. For a request
    ///     that is not safe to repeat (a `POST` without an `Idempotency-Key`).
    ///   - isolation: Where `body` runs: the caller's actor, by default.
    ///   - body: Sends the requests; cancellation is its own.
    public static func withJobName<T>(
        _ name: String, atMostOnce: Bool = false, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async rethrows -> T {
        try await $naming.withValue(
            JobNaming(kind: .named(name, sends: Locked(0)), atMostOnce: atMostOnce), operation: body,
            isolation: isolation)
    }

    /// Sends each request of `body` as a job of its own, never read back by a later producer:
    /// for a request that must be made afresh by every producer (a login, whose token may have
    /// expired). Such jobs run at least once.
    ///
    /// - Parameters:
    ///   - isolation: Where `body` runs: the caller's actor, by default.
    ///   - body: Sends the requests; cancellation is its own.
    public static func withFreshJobs<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        try await $naming.withValue(JobNaming(kind: .fresh, atMostOnce: false), operation: body, isolation: isolation)
    }

    /// The id of the job of a request with `input`, and whether it runs at most once, as the
    /// current task's naming says.
    func jobID(method: String, input: Data) -> (id: String, atMostOnce: Bool) {
        switch Self.naming?.kind {
        case .named(let name, let sends)?:
            let number = sends.withLock { count in
                count += 1
                return count
            }
            return ("\(jobPrefix)\(name)#\(number)", Self.naming?.atMostOnce ?? false)
        case .fresh?:
            let number = freshJobs.withLock { count in
                count += 1
                return count
            }
            return ("\(jobPrefix)fresh-\(producer)-\(number)", false)
        case nil:
            let digest = Self.digest(of: input)
            let occurrence = occurrences.withLock { counts in
                counts[digest, default: 0] += 1
                return counts[digest]!
            }
            return ("\(jobPrefix)\(method)-\(digest)-\(occurrence)", false)
        }
    }

    /// 32 hex digits naming `bytes`, the same in every process: an FNV-1a 64-bit hash and one
    /// of the same shape with another offset and multiplier. Not a cryptographic digest: it
    /// tells apart the requests of one run, which come from one producer.
    static func digest(of bytes: Data) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in bytes {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x9e37_79b9_7f4a_7c15
        }
        let hex = { (value: UInt64) in
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(first) + hex(second)
    }
}

/// The request's job ended uncertain: it runs at most once
/// (``DurableHTTPTransport/withJobName(_:atMostOnce:isolation:_:)``), and its worker died or
/// gave it back after it had started sending it, so the server may have received it. It is not
/// sent again unless the run's uncertain jobs are resent (`DurableQueue.resendUncertain(runID:)`).
public struct HTTPJobUncertainError: Error, Sendable, CustomStringConvertible {
    /// The request's method.
    public var method: String
    /// The job's id in the run.
    public var jobID: String
    /// What the store recorded: which worker, which attempt.
    public var reason: String

    /// An error for job `jobID` of a `method` request, with the store's `reason`.
    public init(method: String, jobID: String, reason: String) {
        self.method = method
        self.jobID = jobID
        self.reason = reason
    }

    public var description: String { reason }
}
