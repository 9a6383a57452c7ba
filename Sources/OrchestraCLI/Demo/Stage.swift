/// One of the eight simulated image downloads every scenario works on, like the seed
/// articles' list of image URLs (some of them "大图, 加载慢": big and slow).
struct SimulatedImage: Sendable, Hashable {
    let number: Int
    /// How long the download takes at speed 1, in milliseconds.
    let latency: Int

    var name: String { "img-\(number)" }

    /// Eight downloads of 300 to 1200 ms (at speed 1), deliberately out of order.
    static let all: [SimulatedImage] = [600, 1200, 300, 1050, 450, 750, 350, 900]
        .enumerated()
        .map { SimulatedImage(number: $0.offset + 1, latency: $0.element) }

    static var latencyRange: ClosedRange<Int> {
        all.map(\.latency).min()!...all.map(\.latency).max()!
    }
}

/// A finished simulated download.
struct Download: Sendable {
    let image: SimulatedImage
    /// When it finished, since the scenario started.
    let finishedAt: Duration
}

/// What a scenario works with: simulated time scaled by `--speed`, its lanes on the timeline,
/// and its log.
struct Stage: Sendable {
    let recorder: Recorder
    /// How much faster than nominal the simulated latencies run.
    let speed: Double

    /// A nominal duration in milliseconds, scaled by the speed factor.
    func scaled(_ nominalMilliseconds: Int) -> Duration {
        .milliseconds(Double(nominalMilliseconds) / speed)
    }

    /// Sleeps for a nominal duration (scaled by the speed factor); throws if cancelled.
    func pause(_ nominalMilliseconds: Int) async throws {
        try await Task.sleep(for: scaled(nominalMilliseconds))
    }

    /// Time since the scenario started.
    var now: Duration { recorder.elapsed }

    func lane(_ image: SimulatedImage) -> Lane {
        lane(named: image.name)
    }

    func lane(named name: String) -> Lane {
        Lane(recorder: recorder, index: recorder.lane(named: name))
    }

    /// Writes a line to the scenario's log.
    func note(_ text: String, tone: LogEntry.Tone = .plain) {
        recorder.note(text, tone: tone)
    }

    /// Runs `body` as the lane's whole job: a running segment, then the lane finishes with
    /// its outcome. Errors are recorded and rethrown.
    func perform<Value>(_ lane: Lane, _ body: () async throws -> Value) async throws -> Value {
        do {
            let value = try await lane.run(body)
            lane.finish(.ok)
            return value
        } catch {
            lane.finish(.failed(error))
            throw error
        }
    }

    /// The plain simulated download: the image's latency, recorded on its lane.
    func download(_ image: SimulatedImage) async throws -> Download {
        try await perform(lane(image)) {
            try await pause(image.latency)
            return Download(image: image, finishedAt: now)
        }
    }
}

/// A row of the timeline, as the scenario code sees it.
struct Lane: Sendable {
    let recorder: Recorder
    let index: Int

    /// From now on the lane waits (at a semaphore, a gate, …) until it runs or finishes.
    func waiting() {
        recorder.open(index, .waiting)
    }

    /// Runs one attempt of work; if it throws, the segment shows as a failed attempt.
    func run<Value>(_ body: () async throws -> Value) async throws -> Value {
        recorder.open(index, .running)
        do {
            let value = try await body()
            recorder.close(index, failed: false)
            return value
        } catch {
            recorder.close(index, failed: true)
            throw error
        }
    }

    /// The lane's job is over; counts towards progress.
    func finish(_ outcome: Outcome) {
        recorder.finish(index, outcome)
    }
}
