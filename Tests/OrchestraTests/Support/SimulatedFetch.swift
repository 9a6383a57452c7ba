import Orchestra
import OrchestraTestKit
import Testing

/// A photo gallery: eight image URLs whose downloads take different times.
enum Gallery {
    /// Download times in milliseconds; chosen so no two downloads end at the same instant in
    /// the scenarios below.
    static let latencies: [Int] = [310, 820, 530, 1270, 440, 770, 690, 1030]
    static let urls = latencies.indices.map { "https://img.example/\($0).png" }
}

/// Simulated downloads on a manual clock that record when each started and how many ran at once.
final class SimulatedNetwork: Sendable {
    let clock: ManualClock
    let probe = ConcurrencyProbe()
    private let log = Locked<[Int: Duration]>([:])

    init(clock: ManualClock) {
        self.clock = clock
    }

    /// When each download started (virtual time since the clock's start), by index.
    var starts: [Int: Duration] { log.withLock { $0 } }

    /// Downloads item `index`: sleeps its latency on the manual clock.
    func fetch(_ index: Int) async throws -> String {
        try await probe.measure {
            log.withLock { $0[index] = clock.now.offset }
            try await clock.sleep(for: .milliseconds(Gallery.latencies[index]))
            return "image \(index)"
        }
    }

    /// Drives the clock until every download has ended: before each step it waits until
    /// `expectedSleepers(now)` downloads are asleep and `settled(woken)` holds (for example:
    /// every download woken so far has been handled), then moves to the next deadline.
    ///
    /// `settled` matters at the end of a batch, when nothing new starts: without it the next
    /// step could wake a download before the one woken earlier was handled.
    func drive(
        totalWakeups: Int,
        expectedSleepers: (Duration) -> Int,
        settled: @escaping @Sendable (Int) -> Bool = { _ in true }
    ) async throws {
        var woken = 0
        while woken < totalWakeups {
            try await clock.waitForSleepers(expectedSleepers(clock.now.offset), timeout: .seconds(20))
            let wokenSoFar = woken
            try await waitUntil("the downloads woken so far are handled") { settled(wokenSoFar) }
            woken += clock.advanceToNextDeadline()
        }
    }
}

/// The reference schedule that the batch rules imply, computed by a discrete-event model:
/// items start in input order while fewer than `limit` run and fewer than `limit + buffer` are
/// started-but-undelivered; an eager consumer takes each result as soon as the order allows.
struct ReferenceSchedule {
    enum Order { case completion, input }

    var starts: [Duration] = []
    var ends: [Duration] = []
    /// Indices in the order the consumer receives them.
    var deliveries: [Int] = []
    var maxConcurrency = 0

    init(latencies: [Int], limit: Int, buffer: Int = 0, order: Order) {
        let count = latencies.count
        var start = [Int?](repeating: nil, count: count)
        var end = [Int?](repeating: nil, count: count)
        var delivered = [Bool](repeating: false, count: count)
        var now = 0
        var nextToStart = 0
        while deliveries.count < count {
            // Deliver what the order allows (eager consumer).
            var progress = true
            while progress {
                progress = false
                let finished = (0..<count).filter { !delivered[$0] && end[$0].map { $0 <= now } == true }
                let candidate: Int? =
                    switch order {
                    case .completion: finished.min { (end[$0]!, $0) < (end[$1]!, $1) }
                    case .input: finished.contains(deliveries.count) ? deliveries.count : nil
                    }
                if let candidate {
                    delivered[candidate] = true
                    deliveries.append(candidate)
                    progress = true
                }
            }
            let running = (0..<count).filter { start[$0] != nil && end[$0]! > now }.count
            let outstanding = (0..<count).filter { start[$0] != nil && !delivered[$0] }.count
            var runningNow = running
            var outstandingNow = outstanding
            while nextToStart < count, runningNow < limit, outstandingNow < limit + buffer {
                start[nextToStart] = now
                end[nextToStart] = now + latencies[nextToStart]
                nextToStart += 1
                runningNow += 1
                outstandingNow += 1
            }
            maxConcurrency = max(maxConcurrency, runningNow)
            guard let next = end.compactMap({ $0 }).filter({ $0 > now }).min() else { continue }
            now = next
        }
        starts = start.map { .milliseconds($0!) }
        ends = end.map { .milliseconds($0!) }
    }

    /// How many downloads are asleep at `time`.
    func sleepers(at time: Duration) -> Int {
        zip(starts, ends).filter { $0.0 <= time && time < $0.1 }.count
    }
}
